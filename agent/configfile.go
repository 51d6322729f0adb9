package agent

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Load reads a configuration file over Default, checks every key against the
// Config type (unknown keys and wrong types are errors) and validates it. Errors
// are one line: file:line: key: reason.
func Load(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config %w", err)
	}
	return Parse(path, b)
}

// Parse is Load on bytes; name is used in errors.
func Parse(name string, data []byte) (Config, error) {
	cfg := Default()
	lines := map[string]int{}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return cfg, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) > 0 {
		root := doc.Content[0]
		if err := checkNode(root, reflect.TypeOf(cfg), "", lines); err != nil {
			return cfg, locate(err, name, lines)
		}
		if err := root.Decode(&cfg); err != nil {
			return cfg, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
		}
	}
	cfg.fillDefaults()
	if err := cfg.Validate(); err != nil {
		return cfg, locate(err, name, lines)
	}
	return cfg, nil
}

// locate adds the file and the key's line to a *KeyError.
func locate(err error, file string, lines map[string]int) error {
	var ke *KeyError
	if errors.As(err, &ke) {
		ke.File = file
		// The key's own line; for a key the file leaves out, its section's.
		for k := ke.Key; ke.Line == 0 && k != ""; {
			ke.Line = lines[k]
			if i := strings.LastIndexAny(k, ".["); i >= 0 {
				k = k[:i]
			} else {
				k = ""
			}
		}
		return ke
	}
	return fmt.Errorf("%s: %w", file, err)
}

var durationType = reflect.TypeOf(time.Duration(0))

// checkNode walks a YAML node against the Go type it will be decoded into, so
// that unknown keys and wrong types are reported with their key path and line,
// and records the line of every key it sees.
func checkNode(n *yaml.Node, t reflect.Type, path string, lines map[string]int) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil // key present with no value: keep the default
	}
	bad := func(format string, a ...any) error {
		return &KeyError{Key: orRoot(path), Reason: fmt.Sprintf(format, a...), Line: n.Line}
	}
	switch {
	case t == durationType:
		if n.Kind != yaml.ScalarNode {
			return bad("want a duration such as 500ms or 10s")
		}
		if _, err := time.ParseDuration(n.Value); err != nil {
			return bad("%q is not a duration (write it with a unit: 500ms, 10s, 1m)", n.Value)
		}
		return nil
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return bad("want a mapping of keys, got %s", describe(n))
		}
		fields := map[string]reflect.StructField{}
		var names []string
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if tag == "" || tag == "-" {
				continue
			}
			fields[tag] = f
			names = append(names, tag)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			key := join(path, k.Value)
			f, ok := fields[k.Value]
			if !ok {
				return &KeyError{Key: key, Reason: fmt.Sprintf("unknown key (known here: %s)", strings.Join(names, ", ")), Line: k.Line}
			}
			lines[key] = k.Line
			if err := checkNode(v, f.Type, key, lines); err != nil {
				return err
			}
		}
		return nil
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return bad("want a list, got %s", describe(n))
		}
		for i, e := range n.Content {
			key := path + "[" + strconv.Itoa(i) + "]"
			lines[key] = e.Line
			if err := checkNode(e, t.Elem(), key, lines); err != nil {
				return err
			}
		}
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return bad("want a single value, got %s", describe(n))
	}
	switch t.Kind() {
	case reflect.Bool:
		if n.Tag != "!!bool" {
			return bad("want true or false, got %q", n.Value)
		}
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64, reflect.Uint32:
		if n.Tag != "!!int" {
			return bad("want an integer, got %q", n.Value)
		}
	case reflect.Float64, reflect.Float32:
		if n.Tag != "!!int" && n.Tag != "!!float" {
			return bad("want a number, got %q", n.Value)
		}
	case reflect.String:
		if n.Tag != "!!str" {
			return bad("want a string, got %s %q (quote it)", strings.TrimPrefix(n.Tag, "!!"), n.Value)
		}
	}
	return nil
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return strconv.Quote(n.Value)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orRoot(path string) string {
	if path == "" {
		return "(top level)"
	}
	return path
}
