package agent

import (
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/conf"
	"github.com/monagent/monagent/record"
)

// A daemon section (ptp.ptp4l, ntp.chrony, ntp.ntpd) is written as one
// mapping, one daemon as before instances, or as a list of named instances;
// each section's type (Ptp4lInstances, ChronyInstances, NtpdInstances)
// keeps the first in its promoted fields and the others in More.

// decodeInstances decodes n into *first, or, when n is a list, each entry
// over first's defaults into *first and *more; it says whether n was a list.
func decodeInstances[T any](n *yaml.Node, first *T, more *[]T) (bool, error) {
	if n.Kind != yaml.SequenceNode {
		return false, n.Decode(first)
	}
	def, all := *first, make([]T, len(n.Content))
	for i, e := range n.Content {
		all[i] = def
		if err := e.Decode(&all[i]); err != nil {
			return true, err
		}
	}
	if len(all) > 0 {
		*first, *more = all[0], all[1:]
	}
	return true, nil
}

// instances are every instance with its key: key itself for one written as
// a mapping, key[i] for a list.
func instances[T any](key string, first T, more []T, listed bool) (keys []string, all []T) {
	all = append([]T{first}, more...)
	for i := range all {
		if listed {
			keys = append(keys, fmt.Sprintf("%s[%d]", key, i))
		} else {
			keys = append(keys, key)
		}
	}
	return keys, all
}

// instance is what the checks need of a daemon instance.
type instance interface {
	on() bool
	instanceName() string
	place() (key, where string) // where it is asked (the key under the instance's): one instance per place
}

// someOn says whether any instance is enabled.
func someOn[T instance](all []T) bool {
	for _, c := range all {
		if c.on() {
			return true
		}
	}
	return false
}

// checkInstances checks that several enabled instances have a name each,
// distinct, and distinct targets; check checks each enabled instance at its
// key.
func checkInstances[T instance](keys []string, all []T, p *problems, check func(key string, c T)) {
	names, targets := conf.Seen[string]{}, conf.Seen[string]{}
	for i, c := range all {
		if !c.on() {
			continue
		}
		k := keys[i]
		if len(all) > 1 && !validTriggerName(c.instanceName()) {
			p.Add(k+".name", "%q: several instances need a name each (letters, digits and _; it tags their records)", c.instanceName())
		} else if j, dup := names.Again(c.instanceName(), i); dup && len(all) > 1 {
			p.Dup(k+".name", keys[j]+".name", "%q names two instances", c.instanceName())
		}
		if tk, where := c.place(); where != "" {
			if j, dup := targets.Again(where, i); dup {
				p.Dup(k+"."+tk, keys[j]+"."+tk, "%s is another instance's: one daemon, read twice", where)
			}
		}
		check(k, c)
	}
}

// buildInstances builds the sources of each enabled instance (build is
// given its key); a failure closes those built and is returned as it is.
func buildInstances[T instance](keys []string, all []T, build func(key string, c T) ([]collect.Source, error)) ([]collect.Source, error) {
	var out []collect.Source
	for i, c := range all {
		if !c.on() {
			continue
		}
		ss, err := build(keys[i], c)
		out = append(out, ss...)
		if err != nil {
			closeSources(out)
			return nil, err
		}
	}
	return out, nil
}

// instanceTags are the tags an instance's records carry first: instance=
// its name, none for an unnamed one (one daemon, as before instances).
func instanceTags(name string) []record.Tag {
	if name == "" {
		return nil
	}
	return []record.Tag{{Key: "instance", Value: name}}
}

// withTags is tags followed by more, in a slice of its own.
func withTags(tags []record.Tag, more ...record.Tag) []record.Tag {
	return append(append(make([]record.Tag, 0, len(tags)+len(more)), tags...), more...)
}

// instanceSource is a source's name for an instance: base, or base:name.
func instanceSource(base, name string) string {
	if name == "" {
		return base
	}
	return base + ":" + name
}
