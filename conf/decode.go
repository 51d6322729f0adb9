package conf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Read reads a configuration file; the error is a *KeyError naming it.
func Read(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		reason := err.Error()
		if errors.As(err, &pe) {
			reason = pe.Err.Error()
		}
		return nil, &KeyError{File: path, Reason: "cannot read: " + reason, Err: err}
	}
	return b, nil
}

// Doc is a decoded file: where each key stands, and which values its walk
// reported and left at their defaults.
type Doc struct {
	Source
	dropped map[string]bool // keys left at their defaults after a problem; "" the whole file
}

// Decode decodes the YAML document data (from the file name) into v, a
// pointer to a struct holding every default, and returns where each key
// stands and the problems of the file's form.
//
// A key given with no value (`ntp:` with nothing under it, `~`) keeps its
// default, as a key left out does; an empty list is written []. Keys that
// are unknown or of the wrong type are reported and then left at their
// defaults, so that checks of the decoded values can report every other
// problem too (see Unreported).
func Decode(name string, data []byte, v any) (*Doc, Problems) {
	d := &Doc{Source: Source{File: name, Lines: map[string]int{}}, dropped: map[string]bool{}}
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil && err != io.EOF {
		d.dropped[""] = true
		return d, Problems{syntaxError(name, err)}
	}
	// A second document (after ---) would be silently ignored: a
	// configuration is one document (an empty one, a trailing ---, holds
	// nothing to ignore).
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if err == io.EOF {
			break
		}
		if err != nil {
			d.dropped[""] = true
			return d, Problems{syntaxError(name, err)}
		}
		if len(next.Content) > 0 && !(next.Content[0].Kind == yaml.ScalarNode && next.Content[0].ShortTag() == "!!null" && next.Content[0].Value == "") {
			d.dropped[""] = true
			return d, Problems{&KeyError{File: name, Key: "yaml", Line: next.Content[0].Line,
				Reason: "a second YAML document (after ---): a configuration file holds one; merge them or use two files"}}
		}
	}
	var l List
	w := walker{lines: d.Lines, l: &l, dropped: d.dropped}
	if len(root.Content) > 0 {
		n := root.Content[0]
		if w.check(n, reflect.TypeOf(v).Elem(), "") {
			if err := n.Decode(v); err != nil {
				l.AddErr(decodeError(err))
			}
		} else {
			d.dropped[""] = true
		}
	}
	return d, l.Problems
}

// Unreported is the problems of checks run on the decoded values that are
// not about a value Decode already reported (and left at its default): one
// problem, one line.
func (d *Doc) Unreported(checked Problems) Problems {
	if d.dropped[""] {
		return nil
	}
	var out Problems
	for _, ke := range checked {
		if !d.follows(ke.Key) {
			out = append(out, ke)
		}
	}
	return out
}

// follows reports whether a problem at key is about a value the walk
// already reported and left at its default (the key or one under it).
func (d *Doc) follows(key string) bool {
	for k := key; k != ""; {
		if d.dropped[k] {
			return true
		}
		i := strings.LastIndexAny(k, ".[")
		if i < 0 {
			break
		}
		k = k[:i]
	}
	return false
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)

// syntaxError is a YAML syntax error as a problem at its line.
func syntaxError(file string, err error) *KeyError {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	ke := &KeyError{File: file, Key: "yaml", Reason: msg, Err: err}
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		ke.Line, _ = strconv.Atoi(m[1])
		ke.Reason = strings.TrimPrefix(err.Error(), m[0])
		// yaml.v3 numbers the lines of its parser's errors (all "did not
		// find expected ...") from 0, those of its scanner's from 1.
		if strings.HasPrefix(ke.Reason, "did not find expected") {
			ke.Line++
		}
	}
	return ke
}

// decodeError turns what the walk did not foresee in decoding into problems.
func decodeError(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return &KeyError{Key: "yaml", Reason: err.Error(), Err: err}
	}
	var ps Problems
	for _, e := range te.Errors {
		ke := &KeyError{Key: "yaml", Reason: e}
		if m := yamlLine.FindStringSubmatch(e); m != nil {
			ke.Line, _ = strconv.Atoi(m[1])
			ke.Reason = strings.TrimPrefix(e, m[0])
		}
		ps = append(ps, ke)
	}
	return ps
}

var durationType = reflect.TypeOf(time.Duration(0))

// keysOf adds the keys of struct type t to fields and names, in order; the
// keys of a struct field tagged ",inline" are t's own, as yaml decodes them.
func keysOf(t reflect.Type, fields map[string]reflect.StructField, names []string) (map[string]reflect.StructField, []string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("yaml"), ",")
		switch {
		case f.Type.Kind() == reflect.Struct && slices.Contains(tag[1:], "inline"):
			fields, names = keysOf(f.Type, fields, names)
		case tag[0] != "" && tag[0] != "-":
			fields[tag[0]] = f
			names = append(names, tag[0])
		}
	}
	return fields, names
}

// DecodeOver decodes n into *x over def, for a list entry's UnmarshalYAML
// (yaml makes each entry from zero): a key the entry leaves out keeps def's
// value, a key it sets is decoded. It decodes through a type of T's fields
// without T's methods, so that T's own UnmarshalYAML is not called again;
// T is a struct whose fields are all exported (as the keys' are).
func DecodeOver[T any](n *yaml.Node, x *T, def T) error {
	t := reflect.TypeFor[T]()
	fields := make([]reflect.StructField, t.NumField())
	for i := range fields {
		if fields[i] = t.Field(i); !fields[i].IsExported() {
			return fmt.Errorf("conf: %s: field %s is unexported, so entries cannot be decoded over defaults", t, fields[i].Name)
		}
	}
	p := reflect.New(reflect.StructOf(fields))
	p.Elem().Set(reflect.ValueOf(def).Convert(p.Elem().Type()))
	err := n.Decode(p.Interface())
	*x = p.Elem().Convert(t).Interface().(T)
	return err
}

// OneOrList is a type written either as one entry (a mapping, of type
// EntryType) or as a list of such entries (a section with instances): the
// walk checks the entry or each of the list's. The type decodes both forms
// itself (UnmarshalYAML).
type OneOrList interface {
	EntryType() reflect.Type
}

var oneOrListType = reflect.TypeFor[OneOrList]()

// StringOrEntry is a type written either as one string (its short form: a
// webhook's URL) or as a mapping of its keys (its long form): the walk
// checks a string as a string, a mapping as the type's struct. The type
// decodes both forms itself (UnmarshalYAML).
type StringOrEntry interface {
	ShortForm()
}

var stringOrEntryType = reflect.TypeFor[StringOrEntry]()

// walker walks a YAML node against the Go type it will be decoded into, so
// that unknown keys and wrong types are reported with their key path and
// line, records the line of every key it sees, and removes from the tree what
// must not be decoded: keys with no value (they keep their defaults), unknown
// keys and values of the wrong type (reported).
type walker struct {
	lines   map[string]int
	l       *List
	dropped map[string]bool
}

// check reports the problems of n and returns whether it can be decoded.
func (w walker) check(n *yaml.Node, t reflect.Type, path string) bool {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	bad := func(format string, a ...any) bool {
		w.l.Put(&KeyError{Key: orRoot(path), Reason: fmt.Sprintf(format, a...), Line: n.Line})
		return false
	}
	if isNull(n) {
		if strings.HasSuffix(path, "]") {
			return bad("an empty list entry")
		}
		return true // an empty document: every default
	}
	if t.Implements(oneOrListType) {
		// One entry as a mapping (the section's first form) or a list of them.
		et := reflect.Zero(t).Interface().(OneOrList).EntryType()
		if n.Kind == yaml.SequenceNode {
			et = reflect.SliceOf(et)
		}
		return w.check(n, et, path)
	}
	if t.Implements(stringOrEntryType) && n.Kind == yaml.ScalarNode {
		return w.check(n, reflect.TypeFor[string](), path)
	}
	switch {
	case t == durationType:
		if n.Kind != yaml.ScalarNode {
			return bad("want a duration such as 500ms or 10s")
		}
		if _, err := time.ParseDuration(n.Value); err != nil {
			return bad("%q is not a duration (write it with a unit: 500ms, 10s, 1m)", n.Value)
		}
		return true
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return bad("want a mapping of keys, got %s", describe(n))
		}
		fields, names := keysOf(t, map[string]reflect.StructField{}, nil)
		kept := n.Content[:0:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			key := join(path, keyName(k))
			f, ok := fields[k.Value]
			switch {
			case !ok:
				w.l.Put(&KeyError{Key: key, Reason: fmt.Sprintf("unknown key (known here: %s)", strings.Join(names, ", ")), Line: k.Line})
				continue
			case w.lines[key] != 0:
				w.l.Put(&KeyError{Key: key, Reason: fmt.Sprintf("given twice (first on line %d)", w.lines[key]), Line: k.Line})
				continue
			}
			w.lines[key] = k.Line
			if isNull(v) {
				continue // a key with no value keeps its default
			}
			if w.check(v, f.Type, key) {
				kept = append(kept, k, v)
			} else {
				w.dropped[key] = true
			}
		}
		n.Content = kept
		return true
	case t.Kind() == reflect.Pointer:
		return w.check(n, t.Elem(), path)
	case t.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			return bad("want a mapping, got %s", describe(n))
		}
		ok := true
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			key := join(path, keyName(k))
			if w.lines[key] != 0 {
				w.l.Put(&KeyError{Key: key, Reason: fmt.Sprintf("given twice (first on line %d)", w.lines[key]), Line: k.Line})
				ok = false
				continue
			}
			w.lines[key] = k.Line
			ok = w.check(k, t.Key(), key) && w.check(v, t.Elem(), key) && ok
		}
		return ok
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return bad("want a list, got %s", describe(n))
		}
		ok := true
		for i, e := range n.Content {
			key := path + "[" + strconv.Itoa(i) + "]"
			w.lines[key] = e.Line
			// A bad element drops the whole list (back to its default) so
			// that the indexes of the others stay those of the file.
			ok = w.check(e, t.Elem(), key) && ok
		}
		return ok
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
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			return bad("%s is out of range for this key", n.Value)
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
	return true
}

func isNull(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
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

// keyName is a mapping key as a problem names it: an empty key as "".
func keyName(k *yaml.Node) string {
	if k.Value == "" {
		return `""`
	}
	return k.Value
}
