package spool

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/monagent/monagent/conf"
)

// Advise says when spool.max_bytes is more than the spool's filesystem can
// hold (its free space and what the spool already takes there): the disk
// would fill before the cap drops the oldest segments, and writes would fail
// instead (counted in dropped_disk).
func (s *Config) Advise(p *conf.List) {
	if !s.Enabled {
		return
	}
	free, at, ok := freeBytes(s.Dir)
	if !ok {
		return
	}
	if held := spoolBytes(s.Dir); s.MaxBytes > free+held {
		with := ""
		if held > 0 {
			with = " (with the spool's own " + conf.MiB(held) + ")"
		}
		p.Add("spool.max_bytes", "%s is more than the %s free on the filesystem of %s%s: the disk fills before the cap drops old segments; lower it or free space",
			conf.MiB(s.MaxBytes), conf.MiB(free+held), at, with)
	}
}

// spoolBytes is what the spool's segments take in dir now.
func spoolBytes(dir string) int64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".seg") {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
	}
	return n
}

// existingAncestor is dir, or the nearest of its parents that exists (the
// spool makes the rest).
func existingAncestor(dir string) string {
	d, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	for {
		if _, err := os.Stat(d); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return d
		}
		d = parent
	}
}
