// Package notify formats and delivers the messages that tell approvers a
// call waits for them: signed webhooks (plain JSON or Slack's blocks) and
// email over SMTP. It knows nothing of the database or of who is subscribed:
// the runtime's outbox decides what to send and records each attempt. A
// message only links to the console; it never carries anything that decides
// an approval by itself, nor the call's input (the console shows that to
// signed-in approvers only).
package notify

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Message is what every channel says about one pending approval.
type Message struct {
	// Delivery is the notification's id: the same on every retry, so a
	// receiver can drop duplicates.
	Delivery     string    `json:"-"`
	Approval     string    `json:"id"`
	Call         string    `json:"call"`
	Session      string    `json:"session"`
	SessionTitle string    `json:"session_title"`
	Agent        string    `json:"agent"`
	AgentName    string    `json:"agent_name"`
	Tool         string    `json:"tool"`
	Kind         string    `json:"kind"`
	Grant        string    `json:"grant"`
	By           string    `json:"by"`
	Model        string    `json:"model"`
	CreatedAt    time.Time `json:"created_at"`
	ExpiresAt    time.Time `json:"expires_at"`
	// URL opens the approval in the console, where a signed-in approver
	// decides; following it decides nothing.
	URL string `json:"url"`
}

// Formats of a webhook's body.
const (
	FormatJSON  = "json"
	FormatSlack = "slack"
)

// MaxBody bounds a webhook's body; the fields are bounded when recorded, so
// this is a guard, not a cut.
const MaxBody = 64 << 10

// jsonBody is the plain webhook: an event type, its delivery id and the approval.
func jsonBody(m Message) ([]byte, error) {
	return json.Marshal(struct {
		Type     string  `json:"type"`
		Delivery string  `json:"delivery"`
		Approval Message `json:"approval"`
		URL      string  `json:"url"`
	}{"approval.pending", m.Delivery, m, m.URL})
}

// slackBody is Slack's incoming-webhook format (also read by Mattermost and
// Rocket.Chat): a text fallback, a section and one button that opens the
// approval in the console.
func slackBody(m Message) ([]byte, error) {
	text := fmt.Sprintf("Approval needed: %s", m.Tool)
	detail := fmt.Sprintf("*Approval needed*\n`%s` (grant *%s*)\nAgent: %s · Session: %s\nCalled by %s%s\nExpires %s",
		slackEscape(m.Tool), slackEscape(m.Grant), slackEscape(orDash(m.AgentName)), slackEscape(orDash(m.SessionTitle)),
		slackEscape(m.By), modelNote(m.Model), m.ExpiresAt.UTC().Format("2006-01-02 15:04 UTC"))
	type obj = map[string]any
	return json.Marshal(obj{
		"text": text,
		"blocks": []obj{
			{"type": "section", "text": obj{"type": "mrkdwn", "text": detail}},
			{"type": "actions", "elements": []obj{{"type": "button", "style": "primary", "url": m.URL,
				"action_id": "open_approval", "text": obj{"type": "plain_text", "text": "Open approval"}}}},
		},
	})
}

// slackEscape keeps text that came from callers from becoming Slack markup
// (links, mentions).
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func modelNote(model string) string {
	if model == "" {
		return ""
	}
	return " (model " + slackEscape(model) + ")"
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "—"
	}
	return s
}

// Body is a webhook's body in its format.
func Body(format string, m Message) ([]byte, error) {
	var b []byte
	var err error
	if format == FormatSlack {
		b, err = slackBody(m)
	} else {
		b, err = jsonBody(m)
	}
	if err == nil && len(b) > MaxBody {
		err = fmt.Errorf("notify: body of %d bytes exceeds %d", len(b), MaxBody)
	}
	return b, err
}

// EmailSubject and EmailText are an approval as an email a person reads.
func EmailSubject(m Message) string {
	return oneLine(fmt.Sprintf("Approval needed: %s (%s)", m.Tool, orDash(m.AgentName)))
}

func EmailText(m Message) string {
	var b strings.Builder
	fmt.Fprintf(&b, "A call waits for your decision.\n\n")
	fmt.Fprintf(&b, "Tool:     %s\nGrant:    %s\nAgent:    %s\nSession:  %s\nCaller:   %s\n", m.Tool, m.Grant,
		orDash(m.AgentName), orDash(m.SessionTitle), m.By)
	if m.Model != "" {
		fmt.Fprintf(&b, "Model:    %s\n", m.Model)
	}
	fmt.Fprintf(&b, "Asked:    %s\nExpires:  %s\n\n", m.CreatedAt.UTC().Format(time.RFC1123), m.ExpiresAt.UTC().Format(time.RFC1123))
	fmt.Fprintf(&b, "Open it in the console to approve or deny:\n%s\n\n", m.URL)
	b.WriteString("This link only opens the approval: deciding needs you signed in.\n")
	b.WriteString("Choose which agents and grants notify you on the Notifications page.\n")
	return b.String()
}

func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, s)
}
