package controllermanager

import (
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"plainkube.dev/plainkube/internal/controller/podautoscaler"
)

func TestRegistryNamesAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Registry {
		for _, n := range []string{r.Name, r.Upstream} {
			if seen[n] {
				t.Errorf("name %q registered twice", n)
			}
			seen[n] = true
		}
		if r.New == nil {
			t.Errorf("%s has no constructor", r.Name)
		}
	}
}

func TestControllersFlag(t *testing.T) {
	all := func() []string {
		var n []string
		for _, r := range Registry {
			n = append(n, r.Name)
		}
		return n
	}
	without := func(drop ...string) []string {
		return slices.DeleteFunc(all(), func(n string) bool { return slices.Contains(drop, n) })
	}
	tests := []struct {
		flag    string
		want    []string
		wantErr string
	}{
		{flag: "", want: all()},
		{flag: "*", want: all()},
		{flag: "*,-deployment", want: without("deployment")},
		{flag: "-deployment,*", want: without("deployment")},
		{flag: "*,-garbage-collector-controller,-podgc", want: without("garbagecollector", "podgc")},
		{flag: "deployment,replicaset", want: []string{"deployment", "replicaset"}},
		{flag: "deployment-controller", want: []string{"deployment"}},
		// The first item naming a controller decides.
		{flag: "deployment,-deployment", want: []string{"deployment"}},
		{flag: "-deployment,deployment,*", want: without("deployment")},
		{flag: "*,-nosuch", wantErr: `--controllers: "nosuch" is not in the list of known controllers`},
		{flag: "bogus", wantErr: `--controllers: "bogus" is not in the list of known controllers`},
	}
	for _, tt := range tests {
		list, err := ParseControllers(tt.flag)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("%q: err %v, want %s", tt.flag, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.flag, err)
			continue
		}
		var got []string
		for _, r := range Registry {
			if Enabled(list, r) {
				got = append(got, r.Name)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%q enables %v, want %v", tt.flag, got, tt.want)
		}
	}
}

// TestAutoscalingOptions: the --horizontal-pod-autoscaler-* values reach
// the controller; zero values leave upstream's defaults.
func TestAutoscalingOptions(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	c, err := newPodAutoscaler(cfg, Options{Autoscaling: AutoscalingOptions{SyncPeriod: 3 * time.Second, Tolerance: 0.25, DownscaleStabilization: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	hpa := c.(*podautoscaler.Controller)
	if hpa.SyncPeriod != 3*time.Second || hpa.Settings.Tolerance != 0.25 || hpa.Settings.DownscaleWindow != time.Minute {
		t.Fatalf("sync period %v, tolerance %v, downscale window %v", hpa.SyncPeriod, hpa.Settings.Tolerance, hpa.Settings.DownscaleWindow)
	}
	c, err = newPodAutoscaler(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	hpa = c.(*podautoscaler.Controller)
	if hpa.SyncPeriod != podautoscaler.DefaultSyncPeriod || hpa.Settings != podautoscaler.DefaultSettings {
		t.Fatalf("defaults: sync period %v, settings %+v", hpa.SyncPeriod, hpa.Settings)
	}
}
