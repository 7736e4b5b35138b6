package nodeports

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"plainkube.dev/plainkube/internal/scheduler/framework"
	"plainkube.dev/plainkube/internal/scheduler/internal/st"
)

func TestFilter(t *testing.T) {
	const no = "Unschedulable: " + ErrReason
	tests := []struct {
		name     string
		existing *v1.Pod
		pod      *v1.Pod
		want     string
	}{
		{"no ports", st.Pod("e").HostPort(80, v1.ProtocolTCP, "").Node("n").Obj(), st.Pod("p").Obj(), ""},
		{"same port", st.Pod("e").HostPort(80, v1.ProtocolTCP, "").Node("n").Obj(), st.Pod("p").HostPort(80, v1.ProtocolTCP, "").Obj(), no},
		{"default protocol is TCP", st.Pod("e").HostPort(80, "", "").Node("n").Obj(), st.Pod("p").HostPort(80, v1.ProtocolTCP, "").Obj(), no},
		{"other protocol", st.Pod("e").HostPort(80, v1.ProtocolTCP, "").Node("n").Obj(), st.Pod("p").HostPort(80, v1.ProtocolUDP, "").Obj(), ""},
		{"other port", st.Pod("e").HostPort(80, v1.ProtocolTCP, "").Node("n").Obj(), st.Pod("p").HostPort(81, v1.ProtocolTCP, "").Obj(), ""},
		{"specific IP vs all", st.Pod("e").HostPort(80, v1.ProtocolTCP, "127.0.0.1").Node("n").Obj(), st.Pod("p").HostPort(80, v1.ProtocolTCP, "").Obj(), no},
		{"all vs specific IP", st.Pod("e").HostPort(80, v1.ProtocolTCP, "").Node("n").Obj(), st.Pod("p").HostPort(80, v1.ProtocolTCP, "10.0.0.1").Obj(), no},
		{"two specific IPs", st.Pod("e").HostPort(80, v1.ProtocolTCP, "10.0.0.2").Node("n").Obj(), st.Pod("p").HostPort(80, v1.ProtocolTCP, "10.0.0.1").Obj(), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := framework.NewSnapshot([]*v1.Pod{tt.existing}, []*v1.Node{st.Node("n").Obj()})
			got := st.Reasons(st.Filter(t, st.Framework(t, Name, New, ""), tt.pod, snap))["n"]
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
