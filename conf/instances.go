package conf

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Instances are the entries of a section key written either as one mapping
// (one instance, the key's first form) or as a list of named instances,
// each decoded over the key's defaults (the first entry's). The walk checks
// either form (OneOrList).
type Instances[T Entry] struct {
	key    string // the key's path: ptp.ptp4l
	list   []T    // one at least, once there are defaults
	listed bool   // written as a list
}

// Entry is an instance's entry: it starts with an Instance (inline) and
// says where its target is asked (Place).
type Entry interface {
	Head() Instance
	// Place is where the instance asks (the key under the entry's, and its
	// value): two enabled instances may not share one. "" for none.
	Place() (key, where string)
}

// Instance is how an instance's entry starts.
type Instance struct {
	// Name tags the instance's records (instance=<name>) and names its
	// source and judged clock (<kind>:<name>); needed when there are several.
	Name    string `yaml:"name"`
	Enabled bool   `yaml:"enabled"`
}

// Head implements Entry.
func (i Instance) Head() Instance { return i }

// NewInstances is one instance, def, at key: the key's defaults.
func NewInstances[T Entry](key string, def T) Instances[T] {
	return Instances[T]{key: key, list: []T{def}}
}

// First is the first instance, the only one when written as a mapping.
func (in *Instances[T]) First() *T {
	if len(in.list) == 0 {
		in.list = make([]T, 1)
	}
	return &in.list[0]
}

// Add adds an instance after the others, as a list in the file does.
func (in *Instances[T]) Add(c T) {
	in.First()
	in.list, in.listed = append(in.list, c), true
}

// EntryType implements OneOrList.
func (Instances[T]) EntryType() reflect.Type { return reflect.TypeFor[T]() }

// UnmarshalYAML decodes one instance, or a list of them, each over the
// first's defaults.
func (in *Instances[T]) UnmarshalYAML(n *yaml.Node) error {
	def := *in.First()
	if in.listed = n.Kind == yaml.SequenceNode; !in.listed {
		return n.Decode(in.First())
	}
	all := make([]T, len(n.Content))
	for i, e := range n.Content {
		all[i] = def
		if err := e.Decode(&all[i]); err != nil {
			return err
		}
	}
	if len(all) > 0 {
		in.list = all
	}
	return nil
}

// All are every instance with its key: the section's for one written as a
// mapping, key[i] for a list.
func (in *Instances[T]) All() (keys []string, all []T) {
	in.First()
	for i := range in.list {
		if in.listed {
			keys = append(keys, fmt.Sprintf("%s[%d]", in.key, i))
		} else {
			keys = append(keys, in.key)
		}
	}
	return keys, in.list
}

// On says whether any instance is enabled.
func (in *Instances[T]) On() bool {
	for _, c := range in.list {
		if c.Head().Enabled {
			return true
		}
	}
	return false
}

// Check checks that several enabled instances have a name each (IsName),
// distinct, and distinct places, then calls check with each enabled
// instance and its key.
func (in *Instances[T]) Check(l *List, check func(key string, c T)) {
	keys, all := in.All()
	names, places := Seen[string]{}, Seen[string]{}
	for i, c := range all {
		h := c.Head()
		if !h.Enabled {
			continue
		}
		k := keys[i]
		if len(all) > 1 && !IsName(h.Name) {
			l.Add(k+".name", "%q: several instances need a name each (letters, digits and _; it tags their records)", h.Name)
		} else if j, dup := names.Again(h.Name, i); dup && len(all) > 1 {
			l.Dup(k+".name", keys[j]+".name", "%q names two instances", h.Name)
		}
		if pk, where := c.Place(); where != "" {
			if j, dup := places.Again(where, i); dup {
				l.Dup(k+"."+pk, keys[j]+"."+pk, "%s is another instance's: one daemon, read twice", where)
			}
		}
		check(k, c)
	}
}

// IsName says whether s is a name that may become part of a metric's or
// a record's key: letters, digits and _, at least one.
func IsName(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	})
}
