// Command svc is the policy-aware model gateway: an OpenAI-compatible
// chat-completions endpoint that records, prices, governs and learns from
// every call, with a management API and a dashboard.
//
// Configuration comes from the environment; see docs/operations.md for every
// variable and its default. main handles the flags, the signals and
// `svc verify`; package app builds and runs the service itself, and is what
// tests run in process.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/svc-gateway/svc/internal/app"
	"github.com/svc-gateway/svc/internal/config"
	"github.com/svc-gateway/svc/internal/version"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "verify" {
		os.Exit(verifyMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Usage = usage
	flag.Parse()
	if *showVersion {
		fmt.Println(version.Version)
		return
	}
	os.Exit(run())
}

// run serves until SIGINT or SIGTERM (SIGHUP reloads the policies and the
// providers file) and returns the exit code.
func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Backstop: plugin processes never outlive svc, even on a failed start.
	defer plugin.CleanupClients()

	cfg, err := config.FromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "svc: configuration:\n"+err.Error())
		return 1
	}
	logger := hclog.New(&hclog.LoggerOptions{
		Name:       "svc",
		Level:      cfg.LogLevel,
		JSONFormat: cfg.LogJSON,
		Output:     os.Stderr,
	})
	// SIGHUP is caught before the server starts: one that arrives as soon as
	// svc answers reloads once it runs rather than ending the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	a, err := app.New(ctx, app.Options{Config: cfg, Logger: logger})
	if err == nil {
		if err = a.Start(ctx); err != nil {
			_ = a.Close()
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "svc:", err)
		return 1
	}
	setGC()

wait:
	for {
		select {
		case <-hup:
			a.ReloadPolicies()
			_, _ = a.ReloadProviders(ctx) // a refused file is logged; the last good set serves
		case <-ctx.Done():
			break wait
		case err := <-a.Failed():
			logger.Error("server stopped", "error", err)
			break wait
		}
	}
	stop()
	if err := a.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "svc: shutdown:", err)
		return 1
	}
	return 0
}

// setGC sets svc's GC percent (see config.GCPercent) once it has started,
// and collects what the start left: the goal it sets is five times the
// heap last marked, which is to be what serving keeps, not the start's
// transient heap of twice that.
func setGC() {
	if config.SetGC(os.LookupEnv) {
		runtime.GC()
	}
}

func usage() {
	fmt.Fprintf(os.Stderr, "usage: svc [-version]\n       svc verify -db <file> -public-key <key> [-checkpoints <file>]   (see svc verify -h)\n\n"+
		"svc is configured through the environment:\n\n")
	for _, v := range config.Vars {
		fmt.Fprintf(os.Stderr, "  %-24s %s (default: %s)\n", v.Name, v.Purpose, v.Default)
	}
}
