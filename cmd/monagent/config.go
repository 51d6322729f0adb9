package main

import (
	"errors"
	"fmt"

	"github.com/monagent/monagent/agent"
)

func configCmd(args []string) error {
	if len(args) != 2 || args[0] != "check" {
		return usageError("config: want 'config check FILE'")
	}
	cfg, err := agent.Load(args[1])
	if err != nil {
		return err
	}
	if err := cfg.Preflight(); err != nil {
		return fileErr(args[1], err)
	}
	fmt.Printf("%s: ok\n", args[1])
	return nil
}

// fileErr names the file on a preflight *KeyError.
func fileErr(path string, err error) error {
	var ke *agent.KeyError
	if errors.As(err, &ke) && ke.File == "" {
		ke.File = path
	}
	return err
}
