package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	apfbootstrap "k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	flowcontrolapply "k8s.io/client-go/applyconfigurations/flowcontrol/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/registry/flowcontrol"
)

// TestFlowControlAPI: flowcontrol.apiserver.k8s.io/v1 FlowSchemas and
// PriorityLevelConfigurations are served with upstream's defaults and
// validation, the server creates upstream's bootstrap configuration at
// start, and re-ensuring it restores auto-updated specs while keeping the
// administrator's changes where upstream keeps them.
func TestFlowControlAPI(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	fsc, plc := cs.FlowcontrolV1().FlowSchemas(), cs.FlowcontrolV1().PriorityLevelConfigurations()

	// The bootstrap configuration, defaulted and marked for auto-update.
	for _, boot := range slices.Concat(apfbootstrap.MandatoryPriorityLevelConfigurations, apfbootstrap.SuggestedPriorityLevelConfigurations) {
		got, err := plc.Get(ctx, boot.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("bootstrap priority level %s: %v", boot.Name, err)
		}
		want := boot.DeepCopy()
		flowcontrol.DefaultPriorityLevel(want)
		if !equality.Semantic.DeepEqual(got.Spec, want.Spec) || got.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
			t.Errorf("priority level %s: spec %+v, annotations %v; want spec %+v", boot.Name, got.Spec, got.Annotations, want.Spec)
		}
	}
	for _, boot := range slices.Concat(apfbootstrap.MandatoryFlowSchemas, apfbootstrap.SuggestedFlowSchemas) {
		got, err := fsc.Get(ctx, boot.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("bootstrap flow schema %s: %v", boot.Name, err)
		}
		if !equality.Semantic.DeepEqual(got.Spec, boot.Spec) || got.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
			t.Errorf("flow schema %s: spec %+v, annotations %v", boot.Name, got.Spec, got.Annotations)
		}
	}
	for _, name := range []string{"exempt", "catch-all", "global-default"} {
		if _, err := fsc.Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("flow schema %s: %v", name, err)
		}
		if _, err := plc.Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("priority level %s: %v", name, err)
		}
	}

	// `kubectl get flowschemas` lists them in matching order, as upstream.
	code, _, body := raw(t, cfg, "GET", "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", "", "application/json;as=Table;v=v1;g=meta.k8s.io", "")
	var table metav1.Table
	if err := json.Unmarshal([]byte(body), &table); code != 200 || err != nil {
		t.Fatalf("flow schema table: %d %v %s", code, err, body)
	}
	var rows []string
	last := 0.0
	for _, r := range table.Rows {
		rows = append(rows, strings.TrimSpace(fmt.Sprintln(r.Cells[:4]...)))
		if p := r.Cells[2].(float64); p < last {
			t.Errorf("flow schema table out of matching order: %v", rows)
		} else {
			last = p
		}
	}
	if len(rows) == 0 || rows[0] != "exempt exempt 1 <none>" || rows[len(rows)-1] != "catch-all catch-all 10000 ByUser" {
		t.Errorf("flow schema table rows %q", rows)
	}

	// A new priority level gets upstream's defaults; its status is the
	// /status subresource's.
	pl, err := plc.Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "batch"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1.LimitResponse{
				Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{}}}},
		Status: flowcontrolv1.PriorityLevelConfigurationStatus{Conditions: []flowcontrolv1.PriorityLevelConfigurationCondition{{Type: "Ignored"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l := pl.Spec.Limited; *l.NominalConcurrencyShares != 30 || *l.LendablePercent != 0 || l.LimitResponse.Queuing.Queues != 64 ||
		l.LimitResponse.Queuing.HandSize != 8 || l.LimitResponse.Queuing.QueueLengthLimit != 50 || len(pl.Status.Conditions) != 0 || pl.Generation != 1 {
		t.Errorf("created priority level: %+v, queuing %+v, status %+v, generation %d", l, l.LimitResponse.Queuing, pl.Status, pl.Generation)
	}
	pl.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](5)
	if pl, err = plc.Update(ctx, pl, metav1.UpdateOptions{}); err != nil || pl.Generation != 2 {
		t.Fatalf("update priority level: %v (generation %d)", err, pl.Generation)
	}
	pl.Status.Conditions = []flowcontrolv1.PriorityLevelConfigurationCondition{{Type: "Ready", Status: flowcontrolv1.ConditionTrue}}
	if pl, err = plc.UpdateStatus(ctx, pl, metav1.UpdateOptions{}); err != nil || len(pl.Status.Conditions) != 1 || pl.Generation != 2 {
		t.Fatalf("update priority level status: %v, %+v", err, pl)
	}
	pl.Status.Conditions = append(pl.Status.Conditions, pl.Status.Conditions[0])
	if _, err := plc.UpdateStatus(ctx, pl, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("status with a duplicate condition: %v, want 422", err)
	}

	fs, err := fsc.Create(ctx, &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "batch-jobs"},
		Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "batch"},
			DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:      []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "batch"}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Namespaces: []string{"*"}}},
			}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fs.Spec.MatchingPrecedence != 1000 {
		t.Errorf("created flow schema's matchingPrecedence = %d, want 1000", fs.Spec.MatchingPrecedence)
	}
	fs, err = fsc.Patch(ctx, "batch-jobs", types.MergePatchType, []byte(`{"spec":{"matchingPrecedence":2000}}`), metav1.PatchOptions{})
	if err != nil || fs.Spec.MatchingPrecedence != 2000 || fs.Generation != 2 {
		t.Fatalf("patch flow schema: %v, %+v", err, fs)
	}
	// The server's APF controller writes the schemas' Dangling conditions
	// meanwhile: the updates below are made again on a conflict.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if fs, err = fsc.Get(ctx, "batch-jobs", metav1.GetOptions{}); err != nil {
			return err
		}
		fs.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionFalse, Reason: "Found"}}
		fs, err = fsc.UpdateStatus(ctx, fs, metav1.UpdateOptions{})
		return err
	})
	if err != nil || len(fs.Status.Conditions) != 1 {
		t.Fatalf("update flow schema status: %v, %+v", err, fs)
	}
	// What every k8s.io/apiserver-based server's APF controller writes.
	apply := flowcontrolapply.FlowSchema("batch-jobs").WithStatus(flowcontrolapply.FlowSchemaStatus().WithConditions(
		flowcontrolapply.FlowSchemaCondition().WithType(flowcontrolv1.FlowSchemaConditionDangling).WithStatus(flowcontrolv1.ConditionTrue).
			WithReason("NotFound").WithMessage("missing").WithLastTransitionTime(metav1.Now())))
	fs, err = fsc.ApplyStatus(ctx, apply, metav1.ApplyOptions{FieldManager: "api-priority-and-fairness-config-consumer-v1", Force: true})
	if err != nil || len(fs.Status.Conditions) != 1 || fs.Status.Conditions[0].Status != flowcontrolv1.ConditionTrue || fs.Spec.MatchingPrecedence != 2000 {
		t.Fatalf("apply flow schema status: %v, %+v", err, fs)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if fs, err = fsc.Get(ctx, "batch-jobs", metav1.GetOptions{}); err != nil {
			return err
		}
		fs.Status.Conditions = nil
		fs.Spec.MatchingPrecedence = 3000
		fs, err = fsc.Update(ctx, fs, metav1.UpdateOptions{})
		return err
	})
	if err != nil || len(fs.Status.Conditions) != 1 || fs.Spec.MatchingPrecedence != 3000 {
		t.Fatalf("an update of the main resource changed the status or not the spec: %v, %+v", err, fs)
	}
	list, err := fsc.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=batch-jobs"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list flow schemas: %v, %v", err, list)
	}

	// Invalid objects are refused, and the mandatory ones keep their specs.
	_, err = fsc.Create(ctx, &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "first"},
		Spec: flowcontrolv1.FlowSchemaSpec{MatchingPrecedence: 1, PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "batch"}}}, metav1.CreateOptions{})
	want := `FlowSchema.flowcontrol.apiserver.k8s.io "first" is invalid: spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1`
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Errorf("flow schema with precedence 1: %v, want 422 %q", err, want)
	}
	_, err = plc.Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "wide"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1.LimitResponse{
				Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 4, HandSize: 6}}}}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("priority level with handSize > queues: %v, want 422", err)
	}
	catchAll, err := plc.Get(ctx, "catch-all", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	catchAll.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](100)
	if _, err := plc.Update(ctx, catchAll, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("changing catch-all's spec: %v, want 422", err)
	}

	// Re-ensuring the configuration (what a restart does): a suggested
	// object marked for auto-update gets its spec back, one the
	// administrator unmarked keeps its changes, exempt's spec.exempt stays,
	// and marked objects that are no longer in the configuration go.
	change := func(name, autoUpdate string, shares int32) {
		t.Helper()
		pl, err := plc.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pl.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = autoUpdate
		if pl.Spec.Exempt != nil {
			pl.Spec.Exempt.NominalConcurrencyShares = ptr.To(shares)
		} else {
			pl.Spec.Limited.NominalConcurrencyShares = ptr.To(shares)
		}
		if _, err := plc.Update(ctx, pl, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("change %s: %v", name, err)
		}
	}
	change("global-default", "true", 99)
	change("workload-low", "false", 77)
	change("exempt", "true", 7)
	if _, err := fsc.Create(ctx, &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "retired",
		Annotations: map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: "true"}},
		Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "batch"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := ensureFlowControl(ctx, cs); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int32{"global-default": 20, "workload-low": 77} {
		pl, err := plc.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := *pl.Spec.Limited.NominalConcurrencyShares; got != want {
			t.Errorf("after re-ensuring, %s's nominalConcurrencyShares = %d, want %d", name, got, want)
		}
	}
	if pl, err := plc.Get(ctx, "exempt", metav1.GetOptions{}); err != nil || *pl.Spec.Exempt.NominalConcurrencyShares != 7 {
		t.Errorf("after re-ensuring, exempt: %v, %+v", err, pl.Spec.Exempt)
	}
	if _, err := fsc.Get(ctx, "retired", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a marked flow schema not in the configuration: %v, want deleted", err)
	}
	if _, err := fsc.Get(ctx, "batch-jobs", metav1.GetOptions{}); err != nil {
		t.Errorf("an unmarked flow schema: %v, want kept", err)
	}

	if err := fsc.Delete(ctx, "batch-jobs", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := plc.Delete(ctx, "batch", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := plc.Get(ctx, "batch", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("deleted priority level: %v, want 404", err)
	}
}

// TestFlowControlClassifies: the server classifies requests by the stored
// FlowSchemas and priority levels as soon as they are written (upstream's
// e2e "requests can be classified" steps): a FlowSchema's Dangling
// condition says whether its level exists, /metrics gives each level's
// seats, every answer names the schema and level that served it, and a
// rejecting level of one seat refuses a second request of its flow.
func TestFlowControlClassifies(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	fc := cs.FlowcontrolV1()
	pl, err := fc.PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "test-level"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: ptr.To[int32](1), LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	schema := func(name, level string) *flowcontrolv1.FlowSchema {
		fs, err := fc.FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: flowcontrolv1.FlowSchemaSpec{
			MatchingPrecedence: 1000, PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
			DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:         []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "noxu"}}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}
	fs := schema("test-schema", "test-level")
	schema("test-dangling", "no-such-level")
	dangling := func(name string) string {
		fs, err := fc.FlowSchemas().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		for _, c := range fs.Status.Conditions {
			if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
				return string(c.Status) + " " + c.Reason
			}
		}
		return ""
	}
	var seats float64
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			return false, nil
		}
		seats = metricValue(string(raw), "apiserver_flowcontrol_nominal_limit_seats", map[string]string{"priority_level": "test-level"})
		return dangling("test-schema") == "False Found" && dangling("test-dangling") == "True NotFound" && seats > 0, nil
	})
	if err != nil {
		t.Fatalf("steady state: Dangling %q and %q, seats %v", dangling("test-schema"), dangling("test-dangling"), seats)
	}
	// 600 seats, test-level's 1 of the 246 shares.
	if seats != 3 {
		t.Errorf("test-level's seats: %v, want 3", seats)
	}

	get := func(user string) *http.Response {
		c := rest.CopyConfig(cfg)
		c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
		rt, err := rest.TransportFor(c)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("GET", cfg.Host+"/version", nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := get("noxu")
	if got := resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID); got != string(fs.UID) {
		t.Errorf("noxu's request: FlowSchema UID %q, want %q", got, fs.UID)
	}
	if got := resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID); got != string(pl.UID) {
		t.Errorf("noxu's request: level UID %q, want %q", got, pl.UID)
	}
	global, err := fc.FlowSchemas().Get(ctx, "global-default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := get("foo").Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID); got != string(global.UID) {
		t.Errorf("foo's request: FlowSchema UID %q, want global-default's %q", got, global.UID)
	}
}
