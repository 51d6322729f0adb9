package agent

import (
	"errors"

	"github.com/monagent/monagent/conf"
)

// Load reads a configuration file over Default, checks every key against the
// Config type (unknown keys and wrong types are problems) and validates it.
// The error is a *KeyError for a file it cannot read, else Problems: every
// problem of the file, one line each: file:line: key: reason.
func Load(path string) (Config, error) {
	b, err := conf.Read(path)
	if err != nil {
		return Config{}, err
	}
	return Parse(path, b)
}

// Parse is Load on bytes; name is used in errors. Keys that are unknown or
// of the wrong type are reported and left at their defaults, and the checks
// after decoding report every other problem too (conf.Decode).
func Parse(name string, data []byte) (Config, error) {
	cfg := Default()
	doc, all := conf.Decode(name, data, &cfg)
	cfg.src = &doc.Source
	var checked Problems
	if errors.As(cfg.Validate(), &checked) {
		all = append(all, doc.Unreported(checked)...)
	}
	return cfg, cfg.src.Locate(all).Err()
}

// Check is Load for config check: every problem of the file and, as
// warnings, the settings this machine cannot confirm (Config.Board), in the
// order of the file's lines. The error is set only when the file cannot be
// read.
func Check(path string) (Problems, error) {
	cfg, err := Load(path)
	var ps Problems
	if err != nil && !errors.As(err, &ps) {
		return nil, err
	}
	return cfg.src.Locate(append(ps, cfg.Board()...)), nil
}
