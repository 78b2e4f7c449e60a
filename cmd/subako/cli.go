package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/subako/subako/runtime"
)

// offline opens the database for commands that act on it directly.
func offline(name string, args []string, extra func(fs *flag.FlagSet)) (*runtime.Runtime, func(), error) {
	var c Config
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	bindDB(fs, &c)
	extra(fs)
	if err := parseFlags(fs, args); err != nil {
		return nil, nil, err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := openDB(&c, log)
	if err != nil {
		return nil, nil, err
	}
	return runtime.New(db, runtime.Options{Log: log}), func() { db.Close() }, nil
}

func userCmd(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "add" {
		return fmt.Errorf("usage: subako user add --email E --access owner|admin|member|viewer|none [--password-stdin]")
	}
	var email, access, baseURL string
	var pwStdin bool
	rt, done, err := offline("user add", args[1:], func(fs *flag.FlagSet) {
		fs.StringVar(&email, "email", "", "the person's email")
		fs.StringVar(&access, "access", "", "owner, admin, member or viewer")
		fs.BoolVar(&pwStdin, "password-stdin", false, "read the password from standard input")
		fs.StringVar(&baseURL, "base-url", "", "the console's public URL, for the invitation link (default http://127.0.0.1:8080)")
	})
	if err != nil {
		return err
	}
	baseSet := baseURL != ""
	if !baseSet {
		baseURL = "http://127.0.0.1:8080"
	}
	defer done()
	var pw string
	if pwStdin {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && err != io.EOF {
			return err
		}
		if pw = strings.TrimRight(line, "\r\n"); pw == "" {
			return fmt.Errorf("--password-stdin: no password on standard input")
		}
	}
	u, inv, err := rt.UserCreate(context.Background(), runtime.System, email, access, pw)
	if err != nil {
		return err
	}
	if inv.Token != "" {
		fmt.Fprintf(stdout, "invited %s as %s; this link works once: %s/invite/%s\n", inv.Email, inv.Access, strings.TrimRight(baseURL, "/"), inv.Token)
		if !baseSet {
			fmt.Fprintln(stdout, "(the link starts with the default --base-url; give the console's public URL with --base-url or SUBAKO_BASE_URL)")
		}
		return nil
	}
	fmt.Fprintf(stdout, "added %s as %s (%s)\n", u.Email, u.Access, u.ID)
	return nil
}

func tokenCmd(args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		return fmt.Errorf("usage: subako token create --email E [--name N] [--expires 24h] [--permission 'Noun.verb scope']...")
	}
	var email, name, expires string
	var perms []string
	rt, done, err := offline("token create", args[1:], func(fs *flag.FlagSet) {
		fs.StringVar(&email, "email", "", "the person the token acts as")
		fs.StringVar(&name, "name", "cli", "a name to recognise the token by")
		fs.StringVar(&expires, "expires", "24h", "lifetime, such as 24h or 30d (at most 365d)")
		fs.Func("permission", "narrow the token to this permission, \"Noun.verb scope\" (repeat for more; none: it acts as the person)", func(v string) error {
			perms = append(perms, v)
			return nil
		})
	})
	if err != nil {
		return err
	}
	defer done()
	ctx := context.Background()
	p, err := rt.PrincipalForEmail(ctx, email)
	if err != nil {
		return err
	}
	t, err := rt.TokenCreate(ctx, p, runtime.TokenCreateInput{Name: name, Expires: expires, Permissions: perms})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, t.Token)
	return nil
}
