package main

import (
	"fmt"
	"strings"
)

// maxDiffCells bounds diff's table (lines of one file × lines of the other).
const maxDiffCells = 16 << 20

// editOp is one line of a diff: ' ' kept, '-' only in a, '+' only in b.
type editOp struct {
	kind byte
	a, b int // line indexes in a and b (the next ones, for an op that lacks one)
}

// lcsDiff lists the edits from a to b along a longest common subsequence.
func lcsDiff(a, b []string) []editOp {
	n, m := len(a), len(b)
	t := make([][]int32, n+1)
	for i := range t {
		t[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i][j] = t[i+1][j+1] + 1
			} else {
				t[i][j] = max(t[i+1][j], t[i][j+1])
			}
		}
	}
	var ops []editOp
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, editOp{' ', i, j})
			i, j = i+1, j+1
		case j < m && (i >= n || t[i][j+1] >= t[i+1][j]):
			ops = append(ops, editOp{'+', i, j})
			j++
		default:
			ops = append(ops, editOp{'-', i, j})
			i++
		}
	}
	return ops
}

func cmdDiff(c *cmdCtx) int {
	f, ok := c.parse("uqU:iwB", map[string]string{"unified": "u", "brief": "q", "ignore-case": "i", "ignore-all-space": "w"})
	if !ok {
		return 2
	}
	if len(f.rest) != 2 {
		c.fail("missing operand")
		return 2
	}
	a, st1 := c.lines(f.rest[:1])
	b, st2 := c.lines(f.rest[1:])
	if st1+st2 != 0 {
		return 2
	}
	if len(a)*len(b) > maxDiffCells {
		c.fail("files too large to compare: %d × %d lines (the limit is %d)", len(a), len(b), maxDiffCells)
		return 2
	}
	norm := func(ls []string) []string {
		out := make([]string, len(ls))
		for i, l := range ls {
			if f.has("i") {
				l = strings.ToLower(l)
			}
			if f.has("w") {
				l = strings.Join(strings.Fields(l), "")
			}
			out[i] = l
		}
		return out
	}
	ops := lcsDiff(norm(a), norm(b))
	same := true
	for _, op := range ops {
		if op.kind != ' ' {
			same = false
		}
	}
	if same {
		return 0
	}
	if f.has("q") {
		fmt.Fprintf(c.out, "Files %s and %s differ\n", f.rest[0], f.rest[1])
		return 1
	}
	if f.has("u") || f.has("U") {
		ctx, _ := f.num(c, "U", 3)
		fmt.Fprintf(c.out, "--- %s\n+++ %s\n", f.rest[0], f.rest[1])
		unified(c, ops, a, b, ctx)
		return 1
	}
	rng := func(from, to int) string { // 1-based, inclusive
		if to <= from {
			return fmt.Sprint(from)
		}
		return fmt.Sprintf("%d,%d", from, to)
	}
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		start := k
		var dels, adds []editOp
		for k < len(ops) && ops[k].kind != ' ' {
			if ops[k].kind == '-' {
				dels = append(dels, ops[k])
			} else {
				adds = append(adds, ops[k])
			}
			k++
		}
		a0, b0 := ops[start].a, ops[start].b
		switch {
		case len(adds) == 0:
			fmt.Fprintf(c.out, "%sd%d\n", rng(a0+1, a0+len(dels)), b0)
		case len(dels) == 0:
			fmt.Fprintf(c.out, "%da%s\n", a0, rng(b0+1, b0+len(adds)))
		default:
			fmt.Fprintf(c.out, "%sc%s\n", rng(a0+1, a0+len(dels)), rng(b0+1, b0+len(adds)))
		}
		for _, d := range dels {
			fmt.Fprintf(c.out, "< %s\n", a[d.a])
		}
		if len(dels) > 0 && len(adds) > 0 {
			fmt.Fprintln(c.out, "---")
		}
		for _, ad := range adds {
			fmt.Fprintf(c.out, "> %s\n", b[ad.b])
		}
	}
	return 1
}

// unified prints hunks with ctx lines of context around the changes.
func unified(c *cmdCtx, ops []editOp, a, b []string, ctx int) {
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		start := max(0, k-ctx)
		end := k
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*ctx {
				end = min(end+ctx, len(ops))
				break
			}
			end = run
		}
		var la, lb int
		for _, op := range ops[start:end] {
			if op.kind != '+' {
				la++
			}
			if op.kind != '-' {
				lb++
			}
		}
		sa, sb := ops[start].a+1, ops[start].b+1
		if la == 0 {
			sa--
		}
		if lb == 0 {
			sb--
		}
		fmt.Fprintf(c.out, "@@ -%s +%s @@\n", hunkRange(sa, la), hunkRange(sb, lb))
		for _, op := range ops[start:end] {
			switch op.kind {
			case ' ':
				fmt.Fprintln(c.out, " "+a[op.a])
			case '-':
				fmt.Fprintln(c.out, "-"+a[op.a])
			case '+':
				fmt.Fprintln(c.out, "+"+b[op.b])
			}
		}
		k = end
	}
}

func hunkRange(start, n int) string {
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}
