package agent

import (
	"fmt"
	"io"
	"reflect"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/conf"
	"github.com/monagent/monagent/judge"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/timebase"
)

// Instances are the daemons of one section (ptp.ptp4l, ntp.chrony,
// ntp.ntpd), written as one mapping, one daemon as before instances, or as
// a list of named instances, each decoded over the section's defaults.
type Instances[T instance] struct {
	key    string // the section's: ptp.ptp4l
	list   []T    // one at least, once there are defaults
	listed bool   // written as a list
}

// newInstances is one instance, def, at key: the section's defaults.
func newInstances[T instance](key string, def T) Instances[T] {
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

// EntryType implements conf.OneOrList.
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

// on says whether any instance is enabled.
func (in *Instances[T]) on() bool { _, all := in.All(); return someOn(all) }

// Instance is how a daemon instance's entry starts.
type Instance struct {
	// Name tags the instance's records (instance=<name>) and names its
	// source and judged clock (<kind>:<name>); needed when there are several.
	Name    string `yaml:"name"`
	Enabled bool   `yaml:"enabled"`
}

func (i Instance) on() bool             { return i.Enabled }
func (i Instance) instanceName() string { return i.Name }

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
func buildInstances[T instance](in *Instances[T], build func(key string, c T) ([]collect.Source, error)) ([]collect.Source, error) {
	keys, all := in.All()
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

// daemon is what the monitor of a daemon instance (chronyd, ntpd, ptp4l)
// shares: its source's name (kind, or kind:<instance>), the instance's tags,
// its poll interval, its judged clock and the client Close closes.
type daemon struct {
	name     string
	tags     []record.Tag
	interval time.Duration
	judged   *judgement
	client   io.Closer
}

// newDaemon is the monitor of an instance named instance at key, polled
// every interval through client, with its clock judged as j says (clock,
// as source; quiet: how long no sample means the reference is lost). A
// failure closes client.
func newDaemon(env *Env, key, kind, instance string, interval time.Duration, client io.Closer,
	clock, source string, j JudgeConfig, quiet time.Duration) (daemon, error) {
	d := daemon{name: instanceSource(kind, instance), tags: instanceTags(instance), interval: interval, client: client}
	if source == "" {
		source = d.name
	}
	var err error
	if d.judged, err = env.judges.add(clock, source, j, quiet); err != nil {
		client.Close()
		return d, keyErr(key+".judge", "%v", err)
	}
	return d, nil
}

// ntpDaemon sets d to the monitor of a chronyd or ntpd instance (kind):
// the system clock judged as the daemon disciplines it, its reference lost
// after two intervals and a timeout without an answer.
func (d *daemon) ntpDaemon(env *Env, key, kind string, c Instance, interval time.Duration, j JudgeConfig, client io.Closer) (err error) {
	*d, err = newDaemon(env, key, kind, c.Name, interval, client, "system", "", j, 2*interval+env.Config.NTP.Timeout)
	return err
}

func (d *daemon) Name() string            { return d.name }
func (d *daemon) Interval() time.Duration { return d.interval }
func (d *daemon) Close() error            { return d.client.Close() }

// judgeDaemon judges the system clock as a daemon disciplines it, by its
// answer at t: synchronised or not, its offset, and the bound both chronyc's
// and ntpq's documentation give, |offset| + root dispersion + ½ root delay,
// which grows at the daemon's wander (chronyd's skew, ntpd's clk_wander).
func (d *daemon) judgeDaemon(b adder, t int64, synced bool, offset, rootDelay, rootDisp, wanderPPB int64) {
	d.judged.observe(b, judge.Sample{TimeNS: t, Synced: synced, OffsetNS: offset,
		BoundNS: judge.Daemon(offset, rootDelay, rootDisp), FreqErrPPB: wanderPPB})
}

// unanswered says the daemon's state did not come (err not nil): a sample
// missed now.
func (d *daemon) unanswered(b adder, err error) {
	if err != nil {
		now, _ := timebase.Realtime.Now()
		d.judged.missed(b, now)
	}
}
