package runtime_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/subako/subako/models"
	"github.com/subako/subako/models/modelstest"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/runtime/fn"
	"github.com/subako/subako/runtime/fn/fntest"
)

// newFnRuntime is a runtime over db with its own engine, as one server
// process (or replica) has; compiled code comes from the tests' disk cache.
func newFnRuntime(tb testing.TB, db *models.DB, mods fntest.Modules) (*runtime.Runtime, *fn.Engine) {
	tb.Helper()
	e, err := fn.New(context.Background(), fn.Config{DataDir: mods.DataDir})
	if err != nil {
		tb.Fatal(err)
	}
	rt := runtime.New(db, runtime.Options{})
	rt.SetFunctionEngine(e)
	tb.Cleanup(func() { rt.Close(); _ = e.Close(context.Background()) })
	return rt, e
}

// installJQAndSession installs the shipped jq and opens a session of a
// published version granting it as "jq".
func installJQAndSession(tb testing.TB, rt *runtime.Runtime, mods fntest.Modules) runtime.Principal {
	tb.Helper()
	ctx := context.Background()
	wasm, manifest := mods.Package(tb, "jq")
	if _, err := rt.FunctionInstall(ctx, runtime.System, runtime.FunctionInstallInput{Manifest: manifest, Wasm: wasm}); err != nil {
		tb.Fatal(err)
	}
	name := "bench"
	a, err := rt.AgentCreate(ctx, runtime.System, runtime.AgentInput{Name: &name})
	if err != nil {
		tb.Fatal(err)
	}
	cfg := `{"functions": [{"name": "jq", "package": "jq", "version": "1.0.0", "default_policy": "allow"}]}`
	v, err := rt.VersionCreate(ctx, runtime.System, runtime.VersionCreateInput{Agent: a.ID, Config: json.RawMessage(cfg)})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := rt.VersionPublish(ctx, runtime.System, v.ID); err != nil {
		tb.Fatal(err)
	}
	s, err := rt.SessionCreate(ctx, runtime.System, runtime.SessionCreateInput{Version: v.ID})
	if err != nil {
		tb.Fatal(err)
	}
	return runtime.SessionPrincipal(s.ID, "")
}

var jqInput = json.RawMessage(`{"filter": ".items[] | select(.price > 10) | .name",
	"input": {"items": [{"name": "a", "price": 5}, {"name": "b", "price": 12}]}}`)

func callJQ(tb testing.TB, rt *runtime.Runtime, s runtime.Principal) runtime.ToolCallView {
	tb.Helper()
	wait := 30.0
	c, err := rt.ToolCallCreate(context.Background(), s, runtime.ToolCallInput{Session: s.SessionID, Tool: "fn__jq__query",
		Input: jqInput, WaitSeconds: &wait})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func TestFunctionPackagesSurviveARestartAndReachReplicas(t *testing.T) {
	mods := fntest.Build(t)
	db := modelstest.Open(t)
	first, _ := newFnRuntime(t, db, mods)
	s := installJQAndSession(t, first, mods)

	// A restart: a new process has a new engine, and loads what is stored.
	second, e := newFnRuntime(t, db, mods)
	if n, err := second.LoadFunctions(t.Context()); n != 1 || err != nil {
		t.Fatalf("LoadFunctions = %d, %v; want the one stored package", n, err)
	}
	if _, ok := e.Get("jq", "1.0.0"); !ok {
		t.Fatal("jq is not loaded after LoadFunctions")
	}
	if c := callJQ(t, second, s); c.Status != runtime.CallSucceeded || string(c.Output) != `{"results":["b"]}` {
		t.Fatalf("call after a restart: %s %s %s", c.Status, c.Output, c.Error)
	}

	// A replica that loaded nothing at start finds the package on its first call.
	third, _ := newFnRuntime(t, db, mods)
	if c := callJQ(t, third, s); c.Status != runtime.CallSucceeded {
		t.Fatalf("call on a replica: %s %s", c.Status, c.Error)
	}
}

func TestFunctionCallWithoutAnEngineSaysSo(t *testing.T) {
	mods := fntest.Build(t)
	db := modelstest.Open(t)
	withEngine, _ := newFnRuntime(t, db, mods)
	s := installJQAndSession(t, withEngine, mods)
	bare := runtime.New(db, runtime.Options{})
	t.Cleanup(bare.Close)
	if c := callJQ(t, bare, s); c.Status != runtime.CallFailed || !strings.Contains(c.Error, "not available") {
		t.Fatalf("call on a server without functions: %s %q", c.Status, c.Error)
	}
}

// BenchmarkFunctionCall compares a jq call through ToolCall.create (the
// in-process runtime: resolve, schema check, policy, call record, dispatch,
// usage record) with Engine.Call on the same compiled package.
//
//	go test ./runtime -run '^$' -bench BenchmarkFunctionCall -benchtime 100x
func BenchmarkFunctionCall(b *testing.B) {
	mods := fntest.Build(b)
	rt, e := newFnRuntime(b, modelstest.Open(b), mods)
	s := installJQAndSession(b, rt, mods)
	b.Run("toolcall", func(b *testing.B) {
		for b.Loop() {
			if c := callJQ(b, rt, s); c.Status != runtime.CallSucceeded {
				b.Fatalf("%s %s", c.Status, c.Error)
			}
		}
	})
	b.Run("engine", func(b *testing.B) {
		p, _ := e.Get("jq", "1.0.0")
		for b.Loop() {
			if _, err := e.Call(context.Background(), p, fn.CallRequest{Tool: "query", Input: jqInput}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A failed call keeps the function's stderr whole up to its 16 KiB cap (the
// call's error is not cut shorter), and a cut never splits a character.
func TestFailedFunctionKeepsItsStderr(t *testing.T) {
	mods := fntest.Build(t)
	rt, _ := newFnRuntime(t, modelstest.Open(t), mods)
	s := installJQAndSession(t, rt, mods)
	wait := 30.0
	for _, tc := range []struct {
		filter string
		want   int // at least this many of the repeated character survive
	}{
		{`error("x" * 12000)`, 12000},
		{`error("é" * 12000)`, 8000}, // 24,000 bytes: cut at the cap, on a character
	} {
		c, err := rt.ToolCallCreate(t.Context(), s, runtime.ToolCallInput{Session: s.SessionID, Tool: "fn__jq__query",
			Input: json.RawMessage(`{"filter": ` + strconv.Quote(tc.filter) + `}`), WaitSeconds: &wait})
		if err != nil || c.Status != runtime.CallFailed {
			t.Fatalf("%s: %v %+v", tc.filter, err, c)
		}
		ch := string([]rune(tc.filter)[7])
		if n := strings.Count(c.Error, ch); n < tc.want || !utf8.ValidString(c.Error) {
			t.Fatalf("%s: the error keeps %d of the %q (valid UTF-8: %v), want at least %d", tc.filter, n, ch, utf8.ValidString(c.Error), tc.want)
		}
	}
}
