// Package conf reads YAML configuration files key by key: it checks every
// key of a file against the Go type it is decoded into (unknown keys, wrong
// types, keys given twice, empty list entries), records the line of every
// key, and collects problems rather than stopping at the first, so that a
// person fixing a file sees each problem once, as file:line: key: reason.
//
// It knows nothing of monagent's sections: the agent defines them, checks
// their values with a List, and places the problems with a Source. What it
// gives them is the shapes a key can take: a list entry decoded over its
// defaults (DecodeOver), and a key written as one instance or a list of
// named ones (Instances), with the checks every such list needs.
package conf
