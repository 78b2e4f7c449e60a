package tools

import "testing"

func BenchmarkParse(b *testing.B) {
	data, err := Export(everyKind)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data, cat); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkList(b *testing.B) {
	discovered := map[string][]ToolDef{"orders": {{Name: "lookup"}, {Name: "refund"}}, "crm": {{Name: "find"}}}
	for b.Loop() {
		List(everyKind, discovered, cat)
	}
}

func BenchmarkDiff(b *testing.B) {
	other := everyKind
	other.Sandboxes = []Sandbox{sandbox("workbench", "2027", "none", "ask", nil)}
	for b.Loop() {
		Diff(everyKind, other)
	}
}
