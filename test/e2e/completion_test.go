package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBashCompletion: 'plainkube completion bash' completes subcommands,
// a subcommand's flags (from its own -h) and, after 'kubectl', kubectl's
// commands.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	script, err := exec.Command(binary, "completion", "bash").Output()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "plainkube.bash")
	if err := os.WriteFile(file, script, 0o600); err != nil {
		t.Fatal(err)
	}
	complete := func(words ...string) []string {
		t.Helper()
		// COMP_WORDS is the command line; the last word is being completed.
		cmd := exec.Command(bash, "-c", `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _plainkube; printf '%s\n' "${COMPREPLY[@]}"`,
			"complete", file, binary)
		cmd.Args = append(cmd.Args, words...)
		cmd.Env = append(os.Environ(), "KUBECONFIG=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("completing %v: %v\n%s", words, err, out)
		}
		return strings.Fields(string(out))
	}
	for _, c := range []struct {
		words []string
		want  []string
	}{
		{[]string{"etcd"}, []string{"etcd-snapshot"}},
		{[]string{"server", "--data"}, []string{"--data-dir"}},
		{[]string{"agent", "--ca"}, []string{"--ca-cert-hash", "--ca-file"}},
		{[]string{"kubectl", "rollo"}, []string{"rollout"}},
		{[]string{"completion", "fi"}, []string{"fish"}},
	} {
		if got := complete(c.words...); strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("plainkube %s<TAB>: %v, want %v", strings.Join(c.words, " "), got, c.want)
		}
	}
}
