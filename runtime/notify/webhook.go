package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Headers of a signed webhook.
const (
	HeaderSignature = "Subako-Signature"
	HeaderTimestamp = "Subako-Timestamp"
	HeaderDelivery  = "Subako-Delivery"
)

// Sign is the signature a receiver recomputes: HMAC-SHA256 under the
// channel's secret over the timestamp (Unix seconds), a dot and the raw body,
// hex-encoded. The timestamp inside lets a receiver refuse old replays.
func Sign(secret string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(ts, 10)))
	mac.Write([]byte("."))
	mac.Write(body)
	return "v1=" + hex.EncodeToString(mac.Sum(nil))
}

// Verify checks a signature header against the body, in constant time.
func Verify(secret string, ts int64, body []byte, header string) bool {
	return hmac.Equal([]byte(Sign(secret, ts, body)), []byte(header))
}

// Webhook is one webhook channel, opened from its sealed form.
type Webhook struct {
	URL    string
	Secret string
	Format string
}

// Send posts the message once. It returns the HTTP status when one came
// back; any status outside 2xx is an error. The answer's body is read only a
// little (to reuse the connection) and never kept: a receiver's page is not
// ours to store.
func (w Webhook) Send(ctx context.Context, client *http.Client, m Message, now time.Time) (int, error) {
	body, err := Body(w.Format, m)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		// Not wrapped: the parse error would quote the URL, a credential.
		return 0, errors.New("notify: webhook request: the url cannot be used")
	}
	ts := now.Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Subako-Notifier/1")
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(w.Secret, ts, body))
	req.Header.Set(HeaderDelivery, m.Delivery)
	resp, err := client.Do(req)
	if err != nil {
		// The URL is left out: a Slack-style URL is itself a credential.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, fmt.Errorf("notify: webhook: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("notify: webhook answered %s", resp.Status)
	}
	return resp.StatusCode, nil
}
