package fn

import (
	"net/http"
	"time"
)

// Caps are the server's limits. A manifest may ask for less, never more; a call
// may ask for less than its manifest, never more.
type Caps struct {
	MaxTimeout      time.Duration // longest deadline a call can get
	MaxMemoryMB     int           // largest linear memory a call can get
	DefaultTimeout  time.Duration // when the manifest sets no timeout_ms
	DefaultMemoryMB int           // when the manifest sets no memory_mb

	MaxWasmBytes     int // size of a package's module
	MaxManifestBytes int // size of manifest.json
	MaxInputBytes    int // stdin: {"tool", "input"}
	MaxOutputBytes   int // stdout
	MaxStderrBytes   int // stderr kept for errors; the rest is dropped

	MaxFetches            int           // http_fetch calls per tool call
	MaxFetchRequestBytes  int           // a fetch's request body
	MaxFetchResponseBytes int           // a fetch's response body
	FetchTimeout          time.Duration // one fetch, redirects included, within the call's deadline
	MaxRedirects          int           // hops one fetch follows
}

// DefaultCaps are the limits used when Config.Caps is zero.
func DefaultCaps() Caps {
	return Caps{
		MaxTimeout:      60 * time.Second,
		MaxMemoryMB:     512,
		DefaultTimeout:  10 * time.Second,
		DefaultMemoryMB: 128,

		MaxWasmBytes:     64 << 20,
		MaxManifestBytes: 256 << 10,
		MaxInputBytes:    1 << 20,
		MaxOutputBytes:   4 << 20,
		MaxStderrBytes:   16 << 10,

		MaxFetches:            64,
		MaxFetchRequestBytes:  1 << 20,
		MaxFetchResponseBytes: 8 << 20,
		FetchTimeout:          30 * time.Second,
		MaxRedirects:          10,
	}
}

// Config builds an Engine. Every field has a working zero value.
type Config struct {
	// DataDir holds compiled code in DataDir/fncache, so a restart reuses it
	// instead of compiling again. Empty keeps compiled code in memory only.
	DataDir string
	// Caps are the server's limits; the zero value means DefaultCaps.
	Caps Caps
	// Capacity bounds all calls together; zero fields take DefaultCapacity.
	Capacity Capacity
	// Transport carries http_fetch requests; nil means egress.Transport,
	// which refuses private and loopback addresses unless AllowPrivate is
	// set. Redirects are never left to it.
	Transport http.RoundTripper
	// AllowPrivate lets the default transport reach loopback, private and
	// link-local addresses (--egress-allow-private); no effect on a Transport
	// given here.
	AllowPrivate bool
}

// orDefault fills the zero fields from DefaultCaps, so a partly-set Caps works.
func (c Caps) orDefault() Caps {
	d := DefaultCaps()
	fill := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	fillD := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	fillD(&c.MaxTimeout, d.MaxTimeout)
	fillD(&c.DefaultTimeout, d.DefaultTimeout)
	fillD(&c.FetchTimeout, d.FetchTimeout)
	fill(&c.MaxMemoryMB, d.MaxMemoryMB)
	fill(&c.DefaultMemoryMB, d.DefaultMemoryMB)
	fill(&c.MaxWasmBytes, d.MaxWasmBytes)
	fill(&c.MaxManifestBytes, d.MaxManifestBytes)
	fill(&c.MaxInputBytes, d.MaxInputBytes)
	fill(&c.MaxOutputBytes, d.MaxOutputBytes)
	fill(&c.MaxStderrBytes, d.MaxStderrBytes)
	fill(&c.MaxFetches, d.MaxFetches)
	fill(&c.MaxFetchRequestBytes, d.MaxFetchRequestBytes)
	fill(&c.MaxFetchResponseBytes, d.MaxFetchResponseBytes)
	fill(&c.MaxRedirects, d.MaxRedirects)
	c.DefaultTimeout = min(c.DefaultTimeout, c.MaxTimeout)
	c.DefaultMemoryMB = min(c.DefaultMemoryMB, c.MaxMemoryMB)
	return c
}
