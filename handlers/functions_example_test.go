package handlers

import (
	"encoding/json"
	"testing"
)

func TestToolExample(t *testing.T) {
	cases := []struct {
		schema, want string
		made         bool
	}{
		{`{"type":"object","examples":[{"q":1}],"properties":{"q":{"type":"integer"}}}`, "{\n  \"q\": 1\n}", false},
		{`{"type":"object","required":["code","mode","n"],"properties":{"code":{"type":"string"},"mode":{"enum":["a","b"]},"n":{"type":"integer","default":3},"opt":{"type":"string"}}}`,
			"{\n  \"code\": \"…\",\n  \"mode\": \"a\",\n  \"n\": 3\n}", true},
		{`{"type":"object","properties":{"opt":{"type":"string"}}}`, "", false},
		{`not json`, "", false},
	}
	for _, c := range cases {
		got, made := toolExample(json.RawMessage(c.schema))
		if got != c.want || made != c.made {
			t.Errorf("toolExample(%s) = %q %v, want %q %v", c.schema, got, made, c.want, c.made)
		}
	}
}
