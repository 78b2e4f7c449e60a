package main

import (
	"flag"
	"strings"
	"testing"
)

// --allowed-hosts takes host names; a URL there was taken as the host
// "http" and never matched, so the console answered 421 to its own name
// with a message saying to add the name it had just been given.
func TestAllowedHostsRefusesURLs(t *testing.T) {
	for hosts, want := range map[string]string{
		"console.example.com, 10.0.0.5:8080, [::1]": "",
		"*":                          "",
		"http://console.example.com": "without a scheme or path",
		"console.example.com/":       "without a scheme or path",
		"user@console.example.com":   "without a scheme or path",
	} {
		var c Config
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(new(strings.Builder))
		bindServe(fs, &c)
		if err := parseFlags(fs, []string{"--allowed-hosts", hosts}); err != nil {
			t.Fatal(err)
		}
		err := c.validate()
		if (want == "") != (err == nil) || (err != nil && (!strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--allowed-hosts"))) {
			t.Errorf("--allowed-hosts %q: validate = %v; want %q", hosts, err, want)
		}
	}
}
