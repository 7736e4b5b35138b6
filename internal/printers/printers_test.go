package printers

import (
	"reflect"
	"testing"
	"time"

	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// clock is the fixed "now" of every test.
var clock = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)

func init() { now = func() time.Time { return clock } }

func ago(d time.Duration) metav1.Time { return metav1.NewTime(clock.Add(-d)) }

func agoPtr(d time.Duration) *metav1.Time { t := ago(d); return &t }

func ptr[T any](v T) *T { return &v }

// listedKinds are the kinds the brief asks for; every one must have a table.
var listedKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "Pod"},
	{Version: "v1", Kind: "Namespace"},
	{Version: "v1", Kind: "Node"},
	{Version: "v1", Kind: "Service"},
	{Version: "v1", Kind: "Endpoints"},
	{Version: "v1", Kind: "ConfigMap"},
	{Version: "v1", Kind: "Secret"},
	{Version: "v1", Kind: "ServiceAccount"},
	{Version: "v1", Kind: "Event"},
	{Version: "v1", Kind: "LimitRange"},
	{Version: "v1", Kind: "ResourceQuota"},
	{Version: "v1", Kind: "PersistentVolume"},
	{Version: "v1", Kind: "PersistentVolumeClaim"},
	{Version: "v1", Kind: "ReplicationController"},
	{Version: "v1", Kind: "PodTemplate"},
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Group: "apps", Version: "v1", Kind: "ReplicaSet"},
	{Group: "apps", Version: "v1", Kind: "StatefulSet"},
	{Group: "apps", Version: "v1", Kind: "DaemonSet"},
	{Group: "apps", Version: "v1", Kind: "ControllerRevision"},
	{Group: "batch", Version: "v1", Kind: "Job"},
	{Group: "batch", Version: "v1", Kind: "CronJob"},
	{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"},
	{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"},
	{Group: "discovery.k8s.io", Version: "v1", Kind: "EndpointSlice"},
	{Group: "events.k8s.io", Version: "v1", Kind: "Event"},
	{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"},
	{Group: "networking.k8s.io", Version: "v1", Kind: "IngressClass"},
	{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
	{Group: "storage.k8s.io", Version: "v1", Kind: "StorageClass"},
	{Group: "scheduling.k8s.io", Version: "v1", Kind: "PriorityClass"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfiguration"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"},
	{Group: "certificates.k8s.io", Version: "v1", Kind: "CertificateSigningRequest"},
	{Group: "certificates.k8s.io", Version: "v1", Kind: "ClusterTrustBundle"},
	{Group: "certificates.k8s.io", Version: "v1", Kind: "PodCertificateRequest"},
	{Group: "storagemigration.k8s.io", Version: "v1", Kind: "StorageVersionMigration"},
}

func TestListedKindsHaveTables(t *testing.T) {
	for _, gvk := range listedKinds {
		if For(gvk) == nil {
			t.Errorf("no table for %v", gvk)
		}
	}
	if For(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}) != nil {
		t.Errorf("For(unknown kind) should be nil")
	}
}

// TestZeroObjects checks every table against a zero-value object of its kind:
// no panic, one cell per column, cells of JSON-friendly types; and that other
// types and nil pointers give no row.
func TestZeroObjects(t *testing.T) {
	kinds := runtime.NewScheme()
	if err := scheme.AddToScheme(kinds); err != nil {
		t.Fatal(err)
	}
	if err := apiregistrationv1.AddToScheme(kinds); err != nil {
		t.Fatal(err)
	}
	for _, gvk := range Kinds() {
		spec := For(gvk)
		obj, err := kinds.New(gvk)
		if err != nil {
			t.Errorf("%v: not a known kind: %v", gvk, err)
			continue
		}
		cells := spec.Cells(obj)
		if len(cells) != len(spec.Columns) {
			t.Errorf("%v: %d cells for %d columns: %#v", gvk, len(cells), len(spec.Columns), cells)
		}
		for i, c := range cells {
			switch c.(type) {
			case string, int64, bool:
			default:
				t.Errorf("%v: cell %d (%s) has type %T", gvk, i, spec.Columns[i].Name, c)
			}
		}
		for i, col := range spec.Columns {
			if col.Name == "" || col.Description == "" && gvk.Kind != "RuntimeClass" {
				t.Errorf("%v: column %d lacks a name or description: %+v", gvk, i, col)
			}
			switch col.Type {
			case "string", "integer", "boolean", "date":
			default:
				t.Errorf("%v: column %s has type %q", gvk, col.Name, col.Type)
			}
			if col.Priority != 0 && col.Priority != 1 {
				t.Errorf("%v: column %s has priority %d", gvk, col.Name, col.Priority)
			}
		}
		first := spec.Columns[0]
		// Upstream's StorageVersionMigration and Scale tables give their
		// Name column no format.
		wantFormat := "name"
		if gvk.Kind == "StorageVersionMigration" || gvk.Kind == "Scale" {
			wantFormat = ""
		}
		if gvk.Kind != "Event" && (first.Name != "Name" || first.Format != wantFormat) {
			t.Errorf("%v: first column is %+v, want Name with format %q", gvk, first, wantFormat)
		}

		if gvk.Kind != "Pod" && spec != Default() {
			if got := spec.Cells(&corev1.Pod{}); got != nil {
				t.Errorf("%v: a Pod gave cells %v", gvk, got)
			}
		}
		nilPtr := reflect.Zero(reflect.TypeOf(obj)).Interface().(runtime.Object)
		if spec != Default() {
			if got := spec.Cells(nilPtr); got != nil {
				t.Errorf("%v: a nil pointer gave cells %v", gvk, got)
			}
		}
	}
}

func TestEventColumnsMatchUpstreamOrder(t *testing.T) {
	for _, gvk := range []schema.GroupVersionKind{{Version: "v1", Kind: "Event"}, {Group: "events.k8s.io", Version: "v1", Kind: "Event"}} {
		var names []string
		var wideCols []string
		for _, c := range For(gvk).Columns {
			names = append(names, c.Name)
			if c.Priority == 1 {
				wideCols = append(wideCols, c.Name)
			}
		}
		want := []string{"Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen", "Count", "Name"}
		if !reflect.DeepEqual(names, want) {
			t.Errorf("%v columns = %v, want %v", gvk, names, want)
		}
		wantWide := []string{"Subobject", "Source", "First Seen", "Count", "Name"}
		if !reflect.DeepEqual(wideCols, wantWide) {
			t.Errorf("%v wide columns = %v, want %v", gvk, wideCols, wantWide)
		}
	}
}

func TestDefault(t *testing.T) {
	d := Default()
	if len(d.Columns) != 2 || d.Columns[0].Format != "name" || d.Columns[1].Name != "Created At" || d.Columns[1].Type != "date" {
		t.Fatalf("default columns = %+v", d.Columns)
	}
	created := metav1.NewTime(time.Date(2025, 3, 4, 5, 6, 7, 0, time.FixedZone("X", 3600)))
	role := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "r", CreationTimestamp: created}}
	if got, want := d.Cells(role), row("r", "2025-03-04T04:06:07Z"); !reflect.DeepEqual(got, want) {
		t.Errorf("typed: got %v, want %v", got, want)
	}
	u := &unstructured.Unstructured{}
	u.SetName("w")
	if got, want := d.Cells(u), row("w", "0001-01-01T00:00:00Z"); !reflect.DeepEqual(got, want) {
		t.Errorf("unstructured: got %v, want %v", got, want)
	}
	if got := d.Cells(&metav1.Status{}); got != nil {
		t.Errorf("object without metadata: got %v", got)
	}
}

// podCase builds a pod with containers c1..cN and init containers i1..iM.
func podCase(containers, inits int) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: ago(2 * time.Hour)}}
	for i := 0; i < containers; i++ {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c" + string(rune('1'+i))})
	}
	for i := 0; i < inits; i++ {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "i" + string(rune('1'+i))})
	}
	return p
}

func running(name string, ready bool, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Ready: ready, RestartCount: restarts,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ago(time.Hour)}}}
}

func waiting(name, reason string, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, RestartCount: restarts,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}

func terminated(name, reason string, exit int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: exit}}}
}

func TestPodCells(t *testing.T) {
	readyCond := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	tests := []struct {
		name string
		pod  func() *corev1.Pod
		// want holds the first five cells: NAME READY STATUS RESTARTS AGE.
		want []interface{}
	}{{
		name: "running",
		pod: func() *corev1.Pod {
			p := podCase(2, 0)
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = readyCond
			p.Status.ContainerStatuses = []corev1.ContainerStatus{running("c1", true, 0), running("c2", true, 0)}
			return p
		},
		want: row("p", "2/2", "Running", "0", "120m"),
	}, {
		name: "pending, unscheduled",
		pod: func() *corev1.Pod {
			p := podCase(1, 0)
			p.Status.Phase = corev1.PodPending
			return p
		},
		want: row("p", "0/1", "Pending", "0", "120m"),
	}, {
		name: "scheduling gated",
		pod: func() *corev1.Pod {
			p := podCase(1, 0)
			p.Status.Phase = corev1.PodPending
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "SchedulingGated"}}
			return p
		},
		want: row("p", "0/1", "SchedulingGated", "0", "120m"),
	}, {
		name: "container creating",
		pod: func() *corev1.Pod {
			p := podCase(1, 0)
			p.Status.Phase = corev1.PodPending
			p.Status.ContainerStatuses = []corev1.ContainerStatus{waiting("c1", "ContainerCreating", 0)}
			return p
		},
		want: row("p", "0/1", "ContainerCreating", "0", "120m"),
	}, {
		name: "crash loop with last restart time",
		pod: func() *corev1.Pod {
			p := podCase(1, 0)
			p.Status.Phase = corev1.PodRunning
			cs := waiting("c1", "CrashLoopBackOff", 5)
			cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: ago(5 * time.Minute)}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
			return p
		},
		want: row("p", "0/1", "CrashLoopBackOff", "5 (5m ago)", "120m"),
	}, {
		name: "image pull error",
		pod: func() *corev1.Pod {
			p := podCase(1, 0)
			p.Status.Phase = corev1.PodPending
			p.Status.ContainerStatuses = []corev1.ContainerStatus{waiting("c1", "ErrImagePull", 0)}
			return p
		},
		want: row("p", "0/1", "ErrImagePull", "0", "120m"),
	}, {
		name: "restarts without a termination time",
		pod: func() *corev1.Pod {
			p := podCase(1, 0)
			p.Status.Phase = corev1.PodRunning
			p.Status.ContainerStatuses = []corev1.ContainerStatus{running("c1", true, 3)}
			return p
		},
		want: row("p", "1/1", "Running", "3", "120m"),
	}, {
		name: "first init container running",
		pod: func() *corev1.Pod {
			p := podCase(1, 1)
			p.Status.Phase = corev1.PodPending
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{running("i1", false, 0)}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{waiting("c1", "PodInitializing", 0)}
			return p
		},
		want: row("p", "0/1", "Init:0/1", "0", "120m"),
	}, {
		name: "second of two init containers waiting on PodInitializing",
		pod: func() *corev1.Pod {
			p := podCase(1, 2)
			p.Status.Phase = corev1.PodPending
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{terminated("i1", "Completed", 0), waiting("i2", "PodInitializing", 0)}
			return p
		},
		want: row("p", "0/1", "Init:1/2", "0", "120m"),
	}, {
		name: "init container crash loop",
		pod: func() *corev1.Pod {
			p := podCase(1, 1)
			p.Status.Phase = corev1.PodPending
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{waiting("i1", "CrashLoopBackOff", 2)}
			return p
		},
		want: row("p", "0/1", "Init:CrashLoopBackOff", "2", "120m"),
	}, {
		name: "init container failed without a reason",
		pod: func() *corev1.Pod {
			p := podCase(1, 1)
			p.Status.Phase = corev1.PodPending
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{terminated("i1", "", 3)}
			return p
		},
		want: row("p", "0/1", "Init:ExitCode:3", "0", "120m"),
	}, {
		name: "init done, main container starting",
		pod: func() *corev1.Pod {
			p := podCase(1, 1)
			p.Status.Phase = corev1.PodPending
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{terminated("i1", "Completed", 0)}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{waiting("c1", "PodInitializing", 0)}
			return p
		},
		want: row("p", "0/1", "PodInitializing", "0", "120m"),
	}, {
		name: "running sidecar counts as a container",
		pod: func() *corev1.Pod {
			p := podCase(1, 1)
			p.Spec.InitContainers[0].RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways)
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = append([]corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}}, readyCond...)
			sc := running("i1", true, 1)
			sc.Started = ptr(true)
			sc.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{FinishedAt: ago(3 * time.Minute)}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{sc}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{running("c1", true, 1)}
			return p
		},
		want: row("p", "2/2", "Running", "2 (3m ago)", "120m"),
	}, {
		name: "completed",
		pod: func() *corev1.Pod {
			p := podCase(1, 0)
			p.Status.Phase = corev1.PodSucceeded
			p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("c1", "Completed", 0)}
			return p
		},
		want: row("p", "0/1", "Completed", "0", "120m"),
	}, {
		name: "error",
		pod: func() *corev1.Pod {
			p := podCase(1, 0)
			p.Status.Phase = corev1.PodFailed
			p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("c1", "Error", 1)}
			return p
		},
		want: row("p", "0/1", "Error", "0", "120m"),
	}, {
		name: "killed by a signal",
		pod: func() *corev1.Pod {
			p := podCase(1, 0)
			p.Status.Phase = corev1.PodFailed
			cs := terminated("c1", "", 137)
			cs.State.Terminated.Signal = 9
			p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
			return p
		},
		want: row("p", "0/1", "Signal:9", "0", "120m"),
	}, {
		name: "one container completed, other still running",
		pod: func() *corev1.Pod {
			p := podCase(2, 0)
			p.Status.Phase = corev1.PodRunning
			p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("c1", "Completed", 0), running("c2", true, 0)}
			return p
		},
		want: row("p", "1/2", "NotReady", "0", "120m"),
	}, {
		name: "evicted",
		pod: func() *corev1.Pod {
			p := podCase(1, 0)
			p.Status.Phase = corev1.PodFailed
			p.Status.Reason = "Evicted"
			return p
		},
		want: row("p", "0/1", "Evicted", "0", "120m"),
	}, {
		name: "terminating",
		pod: func() *corev1.Pod {
			p := podCase(1, 0)
			p.DeletionTimestamp = agoPtr(time.Second)
			p.Status.Phase = corev1.PodRunning
			p.Status.ContainerStatuses = []corev1.ContainerStatus{running("c1", true, 0)}
			return p
		},
		want: row("p", "1/1", "Terminating", "0", "120m"),
	}, {
		name: "deleted after it completed",
		pod: func() *corev1.Pod {
			p := podCase(1, 0)
			p.DeletionTimestamp = agoPtr(time.Second)
			p.Status.Phase = corev1.PodSucceeded
			p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("c1", "Completed", 0)}
			return p
		},
		want: row("p", "0/1", "Completed", "0", "120m"),
	}, {
		name: "deleted on a lost node",
		pod: func() *corev1.Pod {
			p := podCase(1, 0)
			p.DeletionTimestamp = agoPtr(time.Second)
			p.Status.Phase = corev1.PodRunning
			p.Status.Reason = "NodeLost"
			return p
		},
		want: row("p", "0/1", "Unknown", "0", "120m"),
	}, {
		name: "no creation time",
		pod: func() *corev1.Pod {
			p := podCase(1, 0)
			p.CreationTimestamp = metav1.Time{}
			p.Status.Phase = corev1.PodPending
			return p
		},
		want: row("p", "0/1", "Pending", "0", "<unknown>"),
	}}
	spec := For(schema.GroupVersionKind{Version: "v1", Kind: "Pod"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := spec.Cells(tt.pod())
			if len(got) != len(spec.Columns) {
				t.Fatalf("%d cells for %d columns", len(got), len(spec.Columns))
			}
			if !reflect.DeepEqual(got[:5], tt.want) {
				t.Errorf("got  %q\nwant %q", got[:5], tt.want)
			}
		})
	}
}

func TestPodWideCells(t *testing.T) {
	spec := For(schema.GroupVersionKind{Version: "v1", Kind: "Pod"})
	p := podCase(1, 0)
	if got, want := spec.Cells(p)[5:], row("<none>", "<none>", "<none>", "<none>"); !reflect.DeepEqual(got, want) {
		t.Errorf("empty: got %q, want %q", got, want)
	}
	p.Spec.NodeName = "n1"
	p.Status.NominatedNodeName = "n2"
	p.Status.PodIP = "10.0.0.9"
	p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.5"}, {IP: "fd00::5"}}
	p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "a"}, {ConditionType: "b"}}
	p.Status.Conditions = []corev1.PodCondition{{Type: "a", Status: corev1.ConditionTrue}, {Type: "b", Status: corev1.ConditionFalse}}
	if got, want := spec.Cells(p)[5:], row("10.0.0.5", "n1", "n2", "1/2"); !reflect.DeepEqual(got, want) {
		t.Errorf("set: got %q, want %q", got, want)
	}
	p.Status.PodIPs = nil
	if got := spec.Cells(p)[5]; got != "10.0.0.9" {
		t.Errorf("podIP fallback: got %q", got)
	}
}

func TestNodeCells(t *testing.T) {
	base := func() *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n", CreationTimestamp: ago(50 * time.Hour)},
			Status: corev1.NodeStatus{
				NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.0", OSImage: "Debian", KernelVersion: "6.1", ContainerRuntimeVersion: "containerd://2.0"},
			},
		}
	}
	tests := []struct {
		name string
		mod  func(n *corev1.Node)
		want []interface{}
	}{{
		name: "ready control plane",
		mod: func(n *corev1.Node) {
			n.Labels = map[string]string{"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/etcd": "true", "kubernetes.io/hostname": "n"}
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}, {Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "n"}, {Type: corev1.NodeInternalIP, Address: "192.168.1.2"}}
		},
		want: row("n", "Ready", "control-plane,etcd", "2d2h", "v1.37.0", "192.168.1.2", "<none>", "Debian", "6.1", "containerd://2.0"),
	}, {
		name: "not ready and cordoned, legacy role label",
		mod: func(n *corev1.Node) {
			n.Labels = map[string]string{"kubernetes.io/role": "worker"}
			n.Spec.Unschedulable = true
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: "1.2.3.4"}}
		},
		want: row("n", "NotReady,SchedulingDisabled", "worker", "2d2h", "v1.37.0", "<none>", "1.2.3.4", "Debian", "6.1", "containerd://2.0"),
	}, {
		name: "no conditions, no info",
		mod: func(n *corev1.Node) {
			n.Status.NodeInfo = corev1.NodeSystemInfo{}
		},
		want: row("n", "Unknown", "<none>", "2d2h", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"),
	}}
	spec := For(schema.GroupVersionKind{Version: "v1", Kind: "Node"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := base()
			tt.mod(n)
			if got := spec.Cells(n); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestServiceCells(t *testing.T) {
	created := ago(90 * time.Second)
	tests := []struct {
		name string
		svc  corev1.ServiceSpec
		lb   []corev1.LoadBalancerIngress
		want []interface{}
	}{{
		name: "cluster IP",
		svc: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"},
			Ports:    []corev1.ServicePort{{Port: 53, Protocol: corev1.ProtocolUDP}, {Port: 53, Protocol: corev1.ProtocolTCP}},
			Selector: map[string]string{"k8s-app": "kube-dns"}},
		want: row("s", "ClusterIP", "10.96.0.10", "<none>", "53/UDP,53/TCP", "90s", "k8s-app=kube-dns"),
	}, {
		name: "node port with external IPs",
		svc: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIPs: []string{"10.96.1.1", "fd00::1"},
			ExternalIPs: []string{"1.1.1.1", "2.2.2.2"},
			Ports:       []corev1.ServicePort{{Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}}},
		want: row("s", "NodePort", "10.96.1.1", "1.1.1.1,2.2.2.2", "80:30080/TCP", "90s", "<none>"),
	}, {
		name: "headless without ports",
		svc:  corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "None", ClusterIPs: []string{"None"}},
		want: row("s", "ClusterIP", "None", "<none>", "<none>", "90s", "<none>"),
	}, {
		name: "load balancer pending",
		svc: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.96.2.2"},
			Ports: []corev1.ServicePort{{Port: 443, NodePort: 31443, Protocol: corev1.ProtocolTCP}}},
		want: row("s", "LoadBalancer", "10.96.2.2", "<pending>", "443:31443/TCP", "90s", "<none>"),
	}, {
		name: "load balancer with ingress and external IP",
		svc: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.96.2.2"},
			ExternalIPs: []string{"9.9.9.9"}},
		lb:   []corev1.LoadBalancerIngress{{Hostname: "lb.example.com"}, {IP: "5.6.7.8"}, {IP: "5.6.7.8"}},
		want: row("s", "LoadBalancer", "10.96.2.2", "5.6.7.8,lb.example.com,9.9.9.9", "<none>", "90s", "<none>"),
	}, {
		name: "external name",
		svc:  corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"},
		want: row("s", "ExternalName", "<none>", "db.example.com", "<none>", "90s", "<none>"),
	}}
	spec := For(schema.GroupVersionKind{Version: "v1", Kind: "Service"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", CreationTimestamp: created}, Spec: tt.svc}
			svc.Status.LoadBalancer.Ingress = tt.lb
			if got := spec.Cells(svc); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestDeploymentCells(t *testing.T) {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: ago(10 * time.Minute)},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(3)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "nginx", Image: "nginx:1.27"}, {Name: "sidecar", Image: "busybox"},
			}}},
		},
		Status: appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2},
	}
	spec := For(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	want := row("web", "2/3", int64(3), int64(2), "10m", "nginx,sidecar", "nginx:1.27,busybox", "app=web")
	if got := spec.Cells(d); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %#v\nwant %#v", got, want)
	}
	var names []string
	for _, c := range spec.Columns {
		names = append(names, c.Name)
	}
	if want := []string{"Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns %v, want %v", names, want)
	}
}

func TestJobCells(t *testing.T) {
	tests := []struct {
		name string
		job  func(j *batchv1.Job)
		want []interface{}
	}{{
		name: "running with completions",
		job: func(j *batchv1.Job) {
			j.Spec.Completions = ptr(int32(5))
			j.Status.Succeeded = 2
			j.Status.StartTime = agoPtr(3 * time.Minute)
		},
		want: row("j", "Running", "2/5", "3m", "60m"),
	}, {
		name: "complete",
		job: func(j *batchv1.Job) {
			j.Spec.Completions = ptr(int32(1))
			j.Status.Succeeded = 1
			j.Status.StartTime = agoPtr(50 * time.Minute)
			j.Status.CompletionTime = agoPtr(49 * time.Minute)
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue}, {Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
		},
		want: row("j", "Complete", "1/1", "60s", "60m"),
	}, {
		name: "failed, work queue",
		job: func(j *batchv1.Job) {
			j.Spec.Parallelism = ptr(int32(3))
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}
		},
		want: row("j", "Failed", "0/1 of 3", "", "60m"),
	}, {
		name: "suspended",
		job: func(j *batchv1.Job) {
			j.Spec.Parallelism = ptr(int32(1))
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobSuspended, Status: corev1.ConditionTrue}}
		},
		want: row("j", "Suspended", "0/1", "", "60m"),
	}, {
		name: "terminating",
		job: func(j *batchv1.Job) {
			j.DeletionTimestamp = agoPtr(time.Second)
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue}}
		},
		want: row("j", "Terminating", "0/1", "", "60m"),
	}, {
		name: "failure target",
		job: func(j *batchv1.Job) {
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue}}
		},
		want: row("j", "FailureTarget", "0/1", "", "60m"),
	}}
	spec := For(schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", CreationTimestamp: ago(time.Hour)}}
			j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "u"}}
			j.Spec.Template.Spec.Containers = []corev1.Container{{Name: "pi", Image: "perl"}}
			tt.job(j)
			got := spec.Cells(j)
			if !reflect.DeepEqual(got[:5], tt.want) {
				t.Errorf("got  %q\nwant %q", got[:5], tt.want)
			}
			if want := row("pi", "perl", "batch.kubernetes.io/controller-uid=u"); !reflect.DeepEqual(got[5:], want) {
				t.Errorf("wide: got %q, want %q", got[5:], want)
			}
		})
	}
}

func TestEventCells(t *testing.T) {
	core := For(schema.GroupVersionKind{Version: "v1", Kind: "Event"})
	newAPI := For(schema.GroupVersionKind{Group: "events.k8s.io", Version: "v1", Kind: "Event"})
	tests := []struct {
		name  string
		event *corev1.Event
		want  []interface{}
	}{{
		name: "classic event",
		event: &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "p.1"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p", FieldPath: "spec.containers{c}"},
			Reason:         "BackOff", Message: "Back-off restarting failed container\n", Type: "Warning",
			Source:         corev1.EventSource{Component: "kubelet", Host: "n1"},
			FirstTimestamp: ago(time.Hour), LastTimestamp: ago(2 * time.Minute), Count: 12,
		},
		want: row("2m", "Warning", "BackOff", "pod/p", "spec.containers{c}", "kubelet, n1",
			"Back-off restarting failed container", "60m", int64(12), "p.1"),
	}, {
		name: "new API singleton",
		event: &corev1.Event{
			ObjectMeta:          metav1.ObjectMeta{Name: "n.2"},
			InvolvedObject:      corev1.ObjectReference{Kind: "Node"},
			Reason:              "Starting",
			Type:                "Normal",
			EventTime:           metav1.NewMicroTime(clock.Add(-30 * time.Second)),
			ReportingController: "plainkube/kubelet", ReportingInstance: "n1",
		},
		want: row("30s", "Normal", "Starting", "node", "", "plainkube/kubelet, n1", "", "30s", int64(1), "n.2"),
	}, {
		name: "series",
		event: &corev1.Event{
			ObjectMeta:          metav1.ObjectMeta{Name: "d.3"},
			InvolvedObject:      corev1.ObjectReference{Kind: "Deployment", Name: "web"},
			Reason:              "ScalingReplicaSet",
			Type:                "Normal",
			EventTime:           metav1.NewMicroTime(clock.Add(-3 * time.Hour)),
			Series:              &corev1.EventSeries{Count: 4, LastObservedTime: metav1.NewMicroTime(clock.Add(-time.Minute))},
			ReportingController: "deployment-controller",
		},
		want: row("60s", "Normal", "ScalingReplicaSet", "deployment/web", "", "deployment-controller", "", "3h", int64(4), "d.3"),
	}, {
		name:  "no times",
		event: &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "x"}},
		want:  row("<unknown>", "", "", "", "", "", "", "<unknown>", int64(1), "x"),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := core.Cells(tt.event); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("core: got  %#v\nwant %#v", got, tt.want)
			}
			e := tt.event
			ev := &eventsv1.Event{
				ObjectMeta: e.ObjectMeta, EventTime: e.EventTime, ReportingController: e.ReportingController,
				ReportingInstance: e.ReportingInstance, Reason: e.Reason, Regarding: e.InvolvedObject, Note: e.Message,
				Type: e.Type, DeprecatedSource: e.Source, DeprecatedFirstTimestamp: e.FirstTimestamp,
				DeprecatedLastTimestamp: e.LastTimestamp, DeprecatedCount: e.Count,
			}
			if e.Series != nil {
				ev.Series = &eventsv1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
			}
			if got := newAPI.Cells(ev); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("events.k8s.io: got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestEndpointsCells(t *testing.T) {
	spec := For(schema.GroupVersionKind{Version: "v1", Kind: "Endpoints"})
	ep := &corev1.Endpoints{ //nolint:staticcheck // Endpoints is still served
		ObjectMeta: metav1.ObjectMeta{Name: "e"},
		Subsets: []corev1.EndpointSubset{{ //nolint:staticcheck // Endpoints is still served
			Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1"}, {IP: "fd00::2"}},
			Ports:     []corev1.EndpointPort{{Name: "http", Port: 80}, {Name: "https", Port: 443}},
		}},
	}
	if got, want := spec.Cells(ep)[1], "10.0.0.1:80,[fd00::2]:80,10.0.0.1:443 + 1 more..."; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	ep.Subsets = []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1"}}}} //nolint:staticcheck // Endpoints is still served
	if got, want := spec.Cells(ep)[1], "10.0.0.1"; got != want {
		t.Errorf("headless: got %q, want %q", got, want)
	}
	ep.Subsets = nil
	if got, want := spec.Cells(ep)[1], "<none>"; got != want {
		t.Errorf("empty: got %q, want %q", got, want)
	}
}
