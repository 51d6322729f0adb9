package guest

import "testing"

func TestCModuleParams(t *testing.T) {
	got := cModuleParams("static unsigned long a;\nstatic unsigned int b = 1;", "a ulong 0444", "b uint 0644")
	want := "\n#include <linux/moduleparam.h>\nstatic unsigned long a;\nstatic unsigned int b = 1;\n" +
		"module_param(a, ulong, 0444);\nmodule_param(b, uint, 0644);\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestParamsOf: a module's parameters are found by its name with - or _.
func TestParamsOf(t *testing.T) {
	p := map[string]string{"i2c-stub": "chip_addr=0x48"}
	for ko, want := range map[string]string{
		"/lib/modules/x/i2c-stub.ko": "chip_addr=0x48", "/x/i2c_stub.ko": "chip_addr=0x48", "/x/i2c-dev.ko": "",
	} {
		if got := paramsOf(p, ko); got != want {
			t.Errorf("paramsOf(%s) = %q, want %q", ko, got, want)
		}
	}
}
