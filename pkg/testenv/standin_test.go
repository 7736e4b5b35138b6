package testenv

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestEnvtestControllers(t *testing.T) {
	cases := []struct {
		env       string
		want      []string
		scheduler bool
		err       bool
	}{
		{"", []string{"garbagecollector", "namespace"}, false, false},
		{"none", nil, false, false},
		{"gc,-namespace", []string{"garbagecollector", "-namespace"}, false, false},
		{"*,scheduler", []string{"*"}, true, false},
		{"scheduler", nil, true, false},
		{"gc,nosuch", nil, false, true},
	}
	for _, c := range cases {
		got, scheduler, err := envtestControllers(c.env)
		if (err != nil) != c.err || !slices.Equal(got, c.want) || scheduler != c.scheduler {
			t.Errorf("%q: %v, scheduler %v, err %v; want %v, scheduler %v, error %v", c.env, got, scheduler, err, c.want, c.scheduler, c.err)
		}
	}
}

func TestUnknownFlags(t *testing.T) {
	var f apiserverFlags
	fs := apiserverFlagSet(&f)
	args := []string{"--secure-port=1", "--feature-gates=A=true", "--made-up=1", "--other", "x", "--", "--after"}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if got := unknownFlags(fs, args); !slices.Equal(got, []string{"made-up", "other"}) {
		t.Errorf("unknown flags %v, want made-up and other", got)
	}
	if f.securePort != 1 || *f.ignored["feature-gates"] != "A=true" {
		t.Errorf("parsed port %d, feature-gates %q", f.securePort, *f.ignored["feature-gates"])
	}
}

// TestEnvtestAssetScripts: the scripts answer --help as envtest's flag
// check reads it (insecure-port absent, so envtest does not pass it;
// unsafe-no-fsync present), and run the plainkube binary otherwise.
func TestEnvtestAssetScripts(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(t.TempDir(), "it's not there")
	if err := WriteEnvtestAssets(dir, exe); err != nil {
		t.Fatal(err)
	}
	hasFlag := func(help, flag string) bool {
		return regexp.MustCompile(`(?m)^\s*--` + flag + `\b`).MatchString(help)
	}
	out, err := exec.Command(filepath.Join(dir, "kube-apiserver"), "--help").CombinedOutput()
	if err != nil || !hasFlag(string(out), "secure-port") || hasFlag(string(out), "insecure-port") {
		t.Errorf("kube-apiserver --help: %v\n%s", err, out)
	}
	out, err = exec.Command(filepath.Join(dir, "etcd"), "--help").CombinedOutput()
	if err != nil || !hasFlag(string(out), "unsafe-no-fsync") {
		t.Errorf("etcd --help: %v\n%s", err, out)
	}
	for _, name := range []string{"kube-apiserver", "etcd", "kubectl"} {
		out, err := exec.Command(filepath.Join(dir, name), "--v=1").CombinedOutput()
		if err == nil || !strings.Contains(string(out), exe) {
			t.Errorf("%s did not run %s: %v\n%s", name, exe, err, out)
		}
	}
}
