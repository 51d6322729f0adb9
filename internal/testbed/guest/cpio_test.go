package guest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

type cpioEntry struct {
	mode, size, major, minor uint64
	data                     string
}

// readNewc parses a newc archive the way the kernel's initramfs unpacker
// does: 110-byte headers of hex fields, the name, padding to 4, the data,
// padding to 4, until TRAILER!!!.
func readNewc(t *testing.T, b []byte) map[string]cpioEntry {
	t.Helper()
	out := map[string]cpioEntry{}
	off := 0
	field := func(i int) uint64 {
		v, err := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
		if err != nil {
			t.Fatalf("at %d field %d: %v", off, i, err)
		}
		return v
	}
	pad := func(n int) int { return (n + 3) &^ 3 }
	for {
		if string(b[off:off+6]) != "070701" {
			t.Fatalf("at %d: magic %q", off, b[off:off+6])
		}
		mode, size, namesize := field(1), field(6), field(11)
		name := string(b[off+110 : off+110+int(namesize)-1])
		data := pad(off + 110 + int(namesize))
		if name == "TRAILER!!!" {
			if data != len(b) {
				t.Errorf("%d bytes after the trailer", len(b)-data)
			}
			return out
		}
		out[name] = cpioEntry{mode: mode, size: size, major: field(9), minor: field(10), data: string(b[data : data+int(size)])}
		off = pad(data + int(size))
	}
}

func TestArchiveIsNewc(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(dir, "prog")
	if err := os.WriteFile(host, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "tree", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "tree", "sub", "f"), []byte("x"), 0o600)
	os.Symlink("sub/f", filepath.Join(dir, "tree", "link"))

	a := NewArchive()
	a.CharDevice("dev/console", 5, 1)
	a.Bytes("/etc/plan.json", 0o644, []byte("{}"))
	if err := a.File("bin/prog", host); err != nil {
		t.Fatal(err)
	}
	if err := a.Tree("src/pkg/testdata", filepath.Join(dir, "tree")); err != nil {
		t.Fatal(err)
	}
	a.Symlink("bin/sh", "busybox")
	var buf bytes.Buffer
	n, err := a.WriteTo(&buf)
	if err != nil || n != int64(buf.Len()) || n%4 != 0 {
		t.Fatalf("wrote %d (buffer %d): %v", n, buf.Len(), err)
	}
	got := readNewc(t, buf.Bytes())
	for name, want := range map[string]cpioEntry{
		"dev":                    {mode: modeDir | 0o755},
		"dev/console":            {mode: modeChr | 0o600, major: 5, minor: 1},
		"etc/plan.json":          {mode: modeFile | 0o644, size: 2, data: "{}"},
		"bin/prog":               {mode: modeFile | 0o755, size: 18, data: "#!/bin/sh\necho hi\n"},
		"bin/sh":                 {mode: modeLink | 0o777, size: 7, data: "busybox"},
		"src/pkg/testdata/sub":   {mode: modeDir | 0o755},
		"src/pkg/testdata/sub/f": {mode: modeFile | 0o600, size: 1, data: "x"},
		"src/pkg/testdata/link":  {mode: modeLink | 0o777, size: 5, data: "sub/f"},
		"src":                    {mode: modeDir | 0o755},
		"src/pkg":                {mode: modeDir | 0o755},
		"src/pkg/testdata":       {mode: modeDir | 0o755},
		"etc":                    {mode: modeDir | 0o755},
		"bin":                    {mode: modeDir | 0o755},
	} {
		if got[name] != want {
			t.Errorf("%s: %+v, want %+v", name, got[name], want)
		}
	}
	if len(got) != 13 {
		t.Errorf("%d entries: %v", len(got), got)
	}
}

func TestDropNode(t *testing.T) {
	dts := "/ {\n\tgpio-keys {\n\t\tcompatible = \"gpio-keys\";\n\t\tpoweroff {\n\t\t\tgpios = <0x8003 0x03 0x00>;\n\t\t};\n\t};\n\n\tpl061@9030000 {\n\t};\n};\n"
	got, err := dropNode(dts, "gpio-keys")
	if want := "/ {\n\n\n\tpl061@9030000 {\n\t};\n};\n"; err != nil || got != want {
		t.Errorf("got %q, %v\nwant %q", got, err, want)
	}
	if _, err := dropNode(dts, "gpio-leds"); err == nil {
		t.Error("a missing node is not an error")
	}
}
