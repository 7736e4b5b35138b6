package main

import (
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestSubcommandsMatchUsage: completion offers what usage lists.
func TestSubcommandsMatchUsage(t *testing.T) {
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^  plainkube ([a-z-]+)`).FindAllStringSubmatch(usage, -1) {
		if !slices.Contains(listed, m[1]) {
			listed = append(listed, m[1])
		}
	}
	a, b := slices.Sorted(slices.Values(listed)), slices.Sorted(slices.Values(subcommands))
	if !slices.Equal(a, b) {
		t.Fatalf("usage lists %v, completion offers %v", a, b)
	}
}

// TestCompletionScripts: each shell's script is printed; bash's parses.
func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		var out strings.Builder
		if err := runCompletion([]string{shell}, &out); err != nil {
			t.Fatalf("%s: %v", shell, err)
		}
		if !strings.Contains(out.String(), "etcd-snapshot") || strings.Contains(out.String(), "%!") {
			t.Errorf("%s script:\n%s", shell, out.String())
		}
		if shell == "bash" {
			if b, err := exec.LookPath("bash"); err == nil {
				cmd := exec.Command(b, "-n")
				cmd.Stdin = strings.NewReader(out.String())
				if msg, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("bash -n: %v\n%s", err, msg)
				}
			}
		}
	}
	if err := runCompletion([]string{"tcsh"}, &strings.Builder{}); err == nil {
		t.Error("tcsh accepted")
	}
}
