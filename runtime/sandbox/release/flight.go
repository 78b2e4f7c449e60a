package release

import (
	"context"
	"io"
)

// flight is one first-use build of a release in this process: the starts
// that need the image meanwhile wait for its result instead of each
// building again, one after the other, after it failed.
type flight struct {
	done chan struct{}
	err  error
}

// buildOnce builds release name for Root, or waits for the build of it this
// process already runs for Root and returns its result.
func (c *Cache) buildOnce(ctx context.Context, name string, progress io.Writer) error {
	c.mu.Lock()
	if c.flights == nil {
		c.flights = map[string]*flight{}
	}
	if f := c.flights[name]; f != nil {
		c.mu.Unlock()
		select {
		case <-f.done:
			return f.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f := &flight{done: make(chan struct{})}
	c.flights[name] = f
	c.mu.Unlock()
	_, f.err = c.Build(ctx, name, BuildOptions{Progress: progress})
	c.mu.Lock()
	delete(c.flights, name)
	c.mu.Unlock()
	close(f.done)
	return f.err
}
