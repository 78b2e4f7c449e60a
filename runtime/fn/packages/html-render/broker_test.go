package htmlrender_test

import (
	"bytes"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/subako/subako/runtime/fn"
)

// A granted origin's image loads through the broker; an ungranted one's is
// refused there and reported missing. The page itself has no network.
func TestHTMLRenderFetchesOnlyGrantedOrigins(t *testing.T) {
	e, p := engine(t)
	granted := imageServer(t, nil)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the ungranted origin was reached: %s", r.URL)
	}))
	defer other.Close()
	a := render(t, e, p, map[string]any{
		"html":       `<img id="a" src="` + granted.URL + `/ok.png"><img id="b" src="` + other.URL + `/no.png">`,
		"screenshot": "",
	}, fn.CallRequest{Origins: []string{granted.URL}})
	if !a.OK {
		t.Fatalf("render failed: %s", a.Error)
	}
	if a.Images != 2 || len(a.MissingImages) != 1 || !strings.HasPrefix(a.MissingImages[0].Src, other.URL) {
		t.Errorf("images %d, missing %+v", a.Images, a.MissingImages)
	}
	if len(a.Fetches) != 2 {
		t.Fatalf("fetches %+v", a.Fetches)
	}
	for _, f := range a.Fetches {
		if strings.HasPrefix(f.URL, granted.URL) != (f.Error == "") {
			t.Errorf("fetch %+v", f)
		}
	}
}

// imageServer serves a 2x2 PNG at every path, until the test ends; hook,
// if any, runs first on each request.
func imageServer(t *testing.T, hook func(*http.Request)) *httptest.Server {
	var img bytes.Buffer
	png.Encode(&img, image2x2())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hook != nil {
			hook(r)
		}
		w.Header().Set("Content-Type", "image/png")
		w.Write(img.Bytes())
	}))
	t.Cleanup(srv.Close)
	return srv
}
