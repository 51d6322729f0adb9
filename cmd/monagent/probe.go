package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/monagent/monagent/agent"
	"github.com/monagent/monagent/inventory"
)

type probeOpts struct {
	json bool
	path string
}

func probeFlags() (*flag.FlagSet, *probeOpts) {
	var o probeOpts
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	fs.BoolVar(&o.json, "json", false, "print JSON for scripts (times as raw int64 ns)")
	fs.StringVar(&o.path, "config", "", "take paths (sys, dev, run) and the influx section from this configuration `FILE`")
	return fs, &o
}

func probeCmd(args []string) error {
	fs, o := probeFlags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg := agent.Default()
	if o.path != "" {
		var err error
		if cfg, err = agent.Load(o.path); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	env := inventory.DefaultEnv(inventory.Paths{Sys: cfg.Paths.Sys, Dev: cfg.Paths.Dev, Run: cfg.Paths.Run})
	if c := &cfg.Influx; c.Enabled {
		env.Influx = &inventory.Influx{URL: c.URL, Org: c.Org, Bucket: c.Bucket, TokenFile: c.TokenFile, TokenEnv: c.TokenEnv, Token: c.Token}
	}
	inv := inventory.Probe(ctx, env)
	if o.json {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(inv); err != nil {
			return err
		}
	} else {
		inv.WriteText(os.Stdout)
	}
	// The configured InfluxDB is the one finding probe fails on: the agent
	// would spool without shipping (the rest is an inventory, not a verdict).
	if ip := inv.Influx; ip != nil && !ip.WriteOK {
		return fmt.Errorf("probe: the InfluxDB of %s (%s) cannot take the agent's writes: %s", o.path, ip.URL, ip.Detail)
	}
	return nil
}
