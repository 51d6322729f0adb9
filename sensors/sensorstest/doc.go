// Package sensorstest builds a BeagleBone-like sysfs and /dev for tests of
// the sensors package and of the agent's sensor source.
package sensorstest
