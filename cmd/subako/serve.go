package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/subako/subako/models"
	"github.com/subako/subako/runtime"
	"github.com/subako/subako/web"
)

// openDB opens and migrates the database the flags name.
func openDB(c *Config, log *slog.Logger) (*models.DB, error) {
	db, err := models.Open(c.Data, c.DatabaseURL)
	if err != nil {
		return nil, err
	}
	ran, err := db.Migrate()
	if err != nil {
		db.Close()
		return nil, err
	}
	if len(ran) > 0 {
		log.Info("migrations applied", "versions", ran, "dialect", db.Dialect)
	}
	return db, nil
}

func newLogger(level string) *slog.Logger {
	l, _ := logLevel(level)
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}

func serve(args []string) error {
	var c Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	bindServe(fs, &c)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := c.validate(); err != nil {
		return err
	}
	log := newLogger(c.LogLevel)
	slog.SetDefault(log)
	if c.DatabaseURL == "" {
		// One process per SQLite database: a second would run every timer
		// twice and never see the first one's events.
		release, err := models.LockSQLite(c.Data)
		if err != nil {
			return err
		}
		defer release()
	}
	replica, err := replicaID(c.ReplicaID, c.Data)
	if err != nil {
		return err
	}
	db, err := openDB(&c, log)
	if err != nil {
		return err
	}
	defer db.Close()
	keys, err := keyring(c.Data)
	if err != nil {
		return err
	}
	rt := runtime.New(db, runtime.Options{Log: log, Keys: keys, ReplicaID: replica, ReplicaURL: c.Cluster.AdvertiseURL, ApprovalTimeout: c.ApprovalTimeout, PermissionDecayDays: c.PermissionDecay, AllowPrivateEgress: c.EgressAllowPrivate, MCPLimits: c.Limits.mcpLimits(),
		LoginThrottle: c.LoginThrottle, ReadyWriteTimeout: c.ReadyWriteTimeout, Notify: c.notifyOptions(), ReleaseInfo: releaseInfo(&c)})
	defer rt.Close()
	if err := wireFunctions(context.Background(), rt, c.Data, c.EgressAllowPrivate, c.Limits.functionCapacity(), log); err != nil {
		return err
	}
	srv, metricsHandler := web.NewWithMetrics(rt, web.Config{BaseURL: c.BaseURL, Log: log,
		CookieHashKey: keys.Derive("cookie hash", 32), CookieBlockKey: keys.Derive("cookie block", 32),
		AllowedHosts: c.allowedHosts(), MetricsToken: c.MetricsToken, MetricsElsewhere: c.MetricsAddr != "",
		RevealFor: c.RevealFor, RevealMax: c.RevealMax, InternalSecret: string(c.Cluster.InternalSecret)})
	if c.Cluster.InternalSecret != "" {
		rt.SetSandboxPeer(web.NewPeer(string(c.Cluster.InternalSecret), c.BaseURL))
	}
	if c.MetricsAddr != "" {
		stopMetrics, err := serveMetrics(c.MetricsAddr, web.MetricsHostCheck(c.BaseURL, c.allowedHosts(), metricsHandler), log)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.Addr, err)
	}
	defer startSandboxes(ctx, &c, rt, log)()
	if err := startVolumes(ctx, &c, rt); err != nil {
		return err
	}
	rt.Start(ctx, 2*time.Second)
	rt.StartNotifier(ctx)
	log.Info("subako serving", "url", c.BaseURL, "dialect", db.Dialect, "data", c.Data, "replica", replica)
	if token, ok, err := rt.EnsureSetupLink(ctx); err != nil {
		return err
	} else if ok {
		// Printed to stdout, not the log: it is a one-time credential for the person at the terminal.
		fmt.Printf("\nNo one has an account yet. Create the owner account (this link works once):\n\n    %s/setup/%s\n\n", c.BaseURL, token)
	}
	// No WriteTimeout: live pages and MCP calls stream for as long as they wait.
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 5 * time.Minute, IdleTimeout: 2 * time.Minute}
	// Live pages hold their streams open; ending the runtime's events lets them finish.
	hs.RegisterOnShutdown(rt.CloseEvents)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: draining")
	rt.SetDraining() // /readyz 503; the sandboxes are suspended once requests end (startSandboxes)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func migrate(args []string) error {
	var c Config
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	bindDB(fs, &c)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	db, err := models.Open(c.Data, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	ran, err := db.Migrate()
	if err != nil {
		return err
	}
	fmt.Printf("applied %d migration(s) on %s\n", len(ran), db.Dialect)
	return nil
}

// serveMetrics serves /metrics alone on its own address, for a scraper on a
// private network: whoever reaches that address may read the figures (h
// refuses the host names a DNS rebinding page would send).
func serveMetrics(addr string, h http.Handler, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on --metrics-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "err", err)
		}
	}()
	log.Info("metrics serving", "addr", addr)
	return func() { _ = hs.Close() }, nil
}
