package guest

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
)

// Archive is an initramfs image in the kernel's "newc" cpio format
// (Documentation/driver-api/early-userspace/buffer-format.rst): directories,
// regular files and symlinks, written in path order so parents come first.
type Archive struct {
	entries map[string]entry
}

type entry struct {
	mode uint32 // type and permission bits, as in stat(2)
	data []byte // file contents or symlink target
	src  string // host file to copy, when data is nil
	size int64
	rdev [2]uint32 // major, minor of a device node
}

const (
	modeDir  = 0o040000
	modeFile = 0o100000
	modeLink = 0o120000
	modeChr  = 0o020000
)

// NewArchive returns an empty archive.
func NewArchive() *Archive { return &Archive{entries: map[string]entry{}} }

func clean(p string) string { return strings.TrimPrefix(path.Clean("/"+p), "/") }

// Dir adds a directory and its parents.
func (a *Archive) Dir(p string) {
	p = clean(p)
	for p != "" && p != "." {
		if _, ok := a.entries[p]; !ok {
			a.entries[p] = entry{mode: modeDir | 0o755}
		}
		p = path.Dir(p)
	}
}

// Bytes adds a file with the given contents and permissions.
func (a *Archive) Bytes(p string, perm fs.FileMode, b []byte) {
	p = clean(p)
	a.Dir(path.Dir(p))
	a.entries[p] = entry{mode: modeFile | uint32(perm.Perm()), data: b, size: int64(len(b))}
}

// File adds a copy of the host file src at p, keeping its permissions.
func (a *Archive) File(p, src string) error {
	st, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("initramfs: %s is not a regular file", src)
	}
	p = clean(p)
	a.Dir(path.Dir(p))
	a.entries[p] = entry{mode: modeFile | uint32(st.Mode().Perm()), src: src, size: st.Size()}
	return nil
}

// Tree adds the host directory src at p, recursively (files, directories and
// symlinks).
func (a *Archive) Tree(p, src string) error {
	return fsWalk(src, func(rel string, d fs.DirEntry) error {
		dst := path.Join(p, rel)
		switch {
		case d.IsDir():
			a.Dir(dst)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(src + "/" + rel)
			if err != nil {
				return fmt.Errorf("initramfs: %w", err)
			}
			a.Symlink(dst, target)
		case d.Type().IsRegular():
			return a.File(dst, src+"/"+rel)
		}
		return nil
	})
}

func fsWalk(root string, fn func(rel string, d fs.DirEntry) error) error {
	return fs.WalkDir(os.DirFS(root), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("initramfs: %w", err)
		}
		if rel == "." {
			return nil
		}
		return fn(rel, d)
	})
}

// Symlink adds a symbolic link at p pointing at target.
func (a *Archive) Symlink(p, target string) {
	p = clean(p)
	a.Dir(path.Dir(p))
	a.entries[p] = entry{mode: modeLink | 0o777, data: []byte(target), size: int64(len(target))}
}

// CharDevice adds a character device node, such as /dev/console (5, 1), which
// the kernel opens as the init's standard input and output before any file
// system is mounted.
func (a *Archive) CharDevice(p string, major, minor uint32) {
	p = clean(p)
	a.Dir(path.Dir(p))
	a.entries[p] = entry{mode: modeChr | 0o600, rdev: [2]uint32{major, minor}}
}

// Size is the total size of the archive's contents, headers excluded.
func (a *Archive) Size() int64 {
	var n int64
	for _, e := range a.entries {
		n += e.size
	}
	return n
}

// WriteTo writes the archive, ending with the TRAILER!!! entry.
func (a *Archive) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	cw := &countWriter{w: bw}
	names := make([]string, 0, len(a.entries))
	for p := range a.entries {
		names = append(names, p)
	}
	sort.Strings(names)
	ino := uint32(1)
	for _, p := range names {
		e := a.entries[p]
		if err := writeEntry(cw, ino, p, e); err != nil {
			return cw.n, err
		}
		ino++
	}
	if err := writeHeader(cw, 0, "TRAILER!!!", 0, 0, 1, [2]uint32{}); err != nil {
		return cw.n, err
	}
	return cw.n, bw.Flush()
}

func writeEntry(w *countWriter, ino uint32, name string, e entry) error {
	nlink := uint32(1)
	if e.mode&0o170000 == modeDir {
		nlink = 2
	}
	if err := writeHeader(w, ino, name, e.mode, e.size, nlink, e.rdev); err != nil {
		return err
	}
	if e.data != nil || e.src == "" {
		if _, err := w.Write(e.data); err != nil {
			return err
		}
	} else {
		f, err := os.Open(e.src)
		if err != nil {
			return fmt.Errorf("initramfs: %w", err)
		}
		n, err := io.Copy(w, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("initramfs: copying %s: %w", e.src, err)
		}
		if n != e.size {
			return fmt.Errorf("initramfs: %s changed size while being copied (%d, then %d bytes)", e.src, e.size, n)
		}
	}
	return pad4(w)
}

func writeHeader(w *countWriter, ino uint32, name string, mode uint32, size int64, nlink uint32, rdev [2]uint32) error {
	if size > 0xffffffff {
		return fmt.Errorf("initramfs: %s is too large for newc (%d bytes)", name, size)
	}
	// magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor, devminor,
	// rdevmajor, rdevminor, namesize, check: 13 fields of 8 hex digits.
	if _, err := fmt.Fprintf(w, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		ino, mode, 0, 0, nlink, 0, uint32(size), 0, 0, rdev[0], rdev[1], len(name)+1, 0); err != nil {
		return err
	}
	if _, err := io.WriteString(w, name+"\x00"); err != nil {
		return err
	}
	return pad4(w)
}

func pad4(w *countWriter) error {
	if r := w.n % 4; r != 0 {
		_, err := w.Write(make([]byte, 4-r))
		return err
	}
	return nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
