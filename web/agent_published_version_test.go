package web_test

import "testing"

// TestAgentListAndGetSayThePublishedVersion: Agent.list and Agent.get answer
// published_version, the id of the agent's newest published version, as the
// registry and $.d.ts declare; an agent with only a draft has none.
func TestAgentListAndGetSayThePublishedVersion(t *testing.T) {
	e := newEnv(t)
	tok := e.owner().token()
	agent, first := e.agentWithDraft(tok)
	type agentOut struct {
		ID               string
		PublishedVersion *string `json:"published_version"`
	}
	var got agentOut
	if st := e.api(tok, "GET", "/agents/"+agent, nil, &got); st != 200 || got.PublishedVersion != nil {
		t.Fatalf("Agent.get of an unpublished agent: %d %+v; want no published_version", st, got)
	}
	if st := e.api(tok, "POST", "/versions/"+first.ID+"/publish", nil, nil); st != 200 {
		t.Fatalf("publish: %d", st)
	}
	var second struct{ ID string }
	if st := e.api(tok, "POST", "/agents/"+agent+"/versions", map[string]any{}, &second); st != 201 {
		t.Fatalf("Version.create: %d", st)
	}
	if st := e.api(tok, "POST", "/versions/"+second.ID+"/publish", nil, nil); st != 200 {
		t.Fatalf("publish: %d", st)
	}
	var draft struct{ ID string }
	e.api(tok, "POST", "/agents/"+agent+"/versions", map[string]any{}, &draft) // a newer draft is not published
	if st := e.api(tok, "GET", "/agents/"+agent, nil, &got); st != 200 || got.PublishedVersion == nil || *got.PublishedVersion != second.ID {
		t.Fatalf("Agent.get: %d %+v; want published_version %s", st, got, second.ID)
	}
	var other struct{ ID string }
	e.api(tok, "POST", "/agents", map[string]any{"name": "unpublished"}, &other)
	var list []agentOut
	if st := e.api(tok, "GET", "/agents", nil, &list); st != 200 || len(list) != 2 {
		t.Fatalf("Agent.list: %d %+v", st, list)
	}
	for _, a := range list {
		switch {
		case a.ID == agent && (a.PublishedVersion == nil || *a.PublishedVersion != second.ID):
			t.Errorf("Agent.list says %+v; want published_version %s", a, second.ID)
		case a.ID == other.ID && a.PublishedVersion != nil:
			t.Errorf("Agent.list gives the unpublished agent a published_version: %+v", a)
		}
	}
}
