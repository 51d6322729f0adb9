package main

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"time"

	"github.com/monagent/monagent/agent"
)

func probeCmd(args []string) error {
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	path := fs.String("config", "", "take paths (sys, dev, run) from this configuration")
	if err := fs.Parse(args); err != nil {
		return usageError(err.Error())
	}
	cfg := agent.Default()
	if *path != "" {
		var err error
		if cfg, err = agent.Load(*path); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inv := agent.Probe(ctx, agent.DefaultProbeEnv(cfg.Paths))
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(inv)
	}
	inv.WriteText(os.Stdout)
	return nil
}
