package apiserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/storage"
)

// listOptions are a list or watch request's query parameters, parsed.
type listOptions struct {
	labels        labels.Selector
	fields        fields.Selector
	limit         int64
	cont          *continueToken
	rv            string // "" (most recent, consistent), "0" (any) or a revision
	rvMatch       metav1.ResourceVersionMatch
	timeout       time.Duration
	bookmarks     bool
	initialEvents *bool
}

func (s *Server) parseListOptions(rq *request) (*listOptions, error) {
	q := rq.r.URL.Query()
	lo := &listOptions{labels: labels.Everything(), fields: fields.Everything()}
	var err error
	if v := q.Get("labelSelector"); v != "" {
		if lo.labels, err = labels.Parse(v); err != nil {
			return nil, badRequest("unable to parse requirement: %v", err)
		}
	}
	if v := q.Get("fieldSelector"); v != "" {
		if lo.fields, err = fields.ParseSelector(v); err != nil {
			return nil, badRequest("%v", err)
		}
		if err := s.checkFieldSelector(rq.rs, lo.fields); err != nil {
			return nil, err
		}
	}
	var errs field.ErrorList
	if v := q.Get("limit"); v != "" {
		if lo.limit, err = strconv.ParseInt(v, 10, 64); err != nil || lo.limit < 0 {
			return nil, badRequest("invalid limit %q", v)
		}
	}
	lo.rv = q.Get("resourceVersion")
	if lo.rv != "" {
		if n, err := strconv.ParseUint(lo.rv, 10, 63); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %s", lo.rv))
		} else if n == 0 {
			lo.rv = "0"
		}
	}
	lo.rvMatch = metav1.ResourceVersionMatch(q.Get("resourceVersionMatch"))
	switch lo.rvMatch {
	case "", metav1.ResourceVersionMatchExact, metav1.ResourceVersionMatchNotOlderThan:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("resourceVersionMatch"), lo.rvMatch, []string{string(metav1.ResourceVersionMatchExact), string(metav1.ResourceVersionMatchNotOlderThan), ""}))
	}
	if lo.rvMatch != "" && lo.rv == "" {
		errs = append(errs, field.Forbidden(field.NewPath("resourceVersionMatch"), "resourceVersionMatch is forbidden unless resourceVersion is provided"))
	}
	if lo.rvMatch == metav1.ResourceVersionMatchExact && lo.rv == "0" {
		errs = append(errs, field.Forbidden(field.NewPath("resourceVersionMatch"), "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""))
	}
	if v := q.Get("continue"); v != "" {
		tok, err := decodeContinue(v)
		if err != nil {
			return nil, badRequest("continue key is not valid: %v", err)
		}
		if lo.rv != "" && lo.rv != "0" || lo.rvMatch != "" {
			errs = append(errs, field.Forbidden(field.NewPath("resourceVersion"), "specifying resource version is not allowed when using continue"))
		}
		lo.cont = tok
	}
	if v := q.Get("timeoutSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, badRequest("invalid timeoutSeconds %q", v)
		}
		lo.timeout = time.Duration(n) * time.Second
	}
	lo.bookmarks = isTrue(q.Get("allowWatchBookmarks"))
	if v := q.Get("sendInitialEvents"); v != "" {
		b := isTrue(v)
		lo.initialEvents = &b
		if rq.info.Verb != "watch" {
			errs = append(errs, field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for list"))
		} else if lo.rvMatch != metav1.ResourceVersionMatchNotOlderThan {
			errs = append(errs, field.Forbidden(field.NewPath("resourceVersionMatch"), "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
		}
	} else if rq.info.Verb == "watch" && lo.rvMatch != "" {
		errs = append(errs, field.Forbidden(field.NewPath("resourceVersionMatch"), "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(metav1.SchemeGroupVersion.WithKind("ListOptions").GroupKind(), "", errs)
	}
	return lo, nil
}

// checkFieldSelector rejects fields the resource cannot select on.
func (s *Server) checkFieldSelector(rs *resourceStore, sel fields.Selector) error {
	for _, req := range sel.Requirements() {
		switch req.Field {
		case "metadata.name", "metadata.namespace":
			continue
		}
		if rs.res.Strategy.SelectableFields != nil {
			if _, ok := rs.res.Strategy.SelectableFields(rs.newObject())[req.Field]; ok {
				continue
			}
		}
		return badRequest("field label not supported: %s", req.Field)
	}
	return nil
}

// fieldSet is the set of selectable fields of obj.
func (rs *resourceStore) fieldSet(obj runtime.Object) fields.Set {
	m := metaOf(obj)
	set := fields.Set{"metadata.name": m.GetName()}
	if rs.res.Namespaced {
		set["metadata.namespace"] = m.GetNamespace()
	}
	if rs.res.Strategy.SelectableFields != nil {
		for k, v := range rs.res.Strategy.SelectableFields(obj) {
			set[k] = v
		}
	}
	return set
}

func (rs *resourceStore) matches(obj runtime.Object, lo *listOptions) bool {
	if !lo.labels.Empty() && !lo.labels.Matches(labels.Set(metaOf(obj).GetLabels())) {
		return false
	}
	return lo.fields.Empty() || lo.fields.Matches(rs.fieldSet(obj))
}

// continueToken is the opaque `continue` of a paginated list: the revision
// the first page was read at and the key the next page starts from.
type continueToken struct {
	APIVersion string `json:"v"`
	Revision   int64  `json:"rv"`
	StartKey   string `json:"start"`
}

func encodeContinue(rev int64, startKey string) string {
	b, _ := json.Marshal(continueToken{APIVersion: "meta.k8s.io/v1", Revision: rev, StartKey: startKey})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinue(s string) (*continueToken, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	var t continueToken
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, err
	}
	// Revision -1 continues at the latest revision (the token a 410 for a
	// compacted revision hands out).
	if t.APIVersion != "meta.k8s.io/v1" || t.Revision <= 0 && t.Revision != latestRevision || strings.Contains(t.StartKey, "..") {
		return nil, errors.New("invalid token")
	}
	return &t, nil
}

// latestRevision in a continue token reads the next pages at the latest
// revision: an inconsistent list, which the client chose by using the
// token of continueExpired's error.
const latestRevision = -1

const inconsistentContinue = "The provided continue parameter is too old to display a consistent list result. " +
	"You can start a new list without the continue parameter, or use the continue token in this response to retrieve " +
	"the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that " +
	"were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."

// continueExpired is the 410 of a continued list whose revision was
// compacted: its Status carries a token that continues from the same key at
// the latest revision, as upstream's.
func continueExpired(tok *continueToken) error {
	err := apierrors.NewResourceExpired(inconsistentContinue)
	err.ErrStatus.ListMeta.Continue = encodeContinue(latestRevision, tok.StartKey)
	return err
}

// revision is the storage revision a continued list reads at (0: latest).
func (t *continueToken) revision() int64 { return max(t.Revision, 0) }

// snapshot reads the keys under prefix as the list options ask: from the
// watch cache for resourceVersion "", "0" and NotOlderThan (after waiting for
// it to catch up), from storage for Exact and continued lists.
func (s *Server) snapshot(ctx context.Context, rs *resourceStore, prefix string, lo *listOptions) ([]storage.KeyValue, int64, error) {
	if lo.cont != nil {
		res, err := rs.store.List(ctx, prefix, storage.ListOptions{Revision: lo.cont.revision(), StartKey: rs.prefix + lo.cont.StartKey})
		if errors.Is(err, storage.ErrCompacted) {
			return nil, 0, continueExpired(lo.cont)
		}
		if err != nil {
			return nil, 0, storageError(err, rs.gr, "")
		}
		return res.Items, res.Revision, nil
	}
	if lo.rvMatch == metav1.ResourceVersionMatchExact {
		rev, _ := strconv.ParseInt(lo.rv, 10, 64)
		res, err := rs.store.List(ctx, prefix, storage.ListOptions{Revision: rev})
		if err != nil {
			return nil, 0, storageError(err, rs.gr, "")
		}
		return res.Items, res.Revision, nil
	}
	if err := s.waitForCache(ctx, rs, lo.rv); err != nil {
		return nil, 0, err
	}
	items, rev := rs.cache.List(ctx, prefix)
	return items, rev, nil
}

// waitForCache waits until rs's cache has caught up with rv: the store's
// current revision for "" (a consistent read), rv itself for a number, and
// not at all for "0".
func (s *Server) waitForCache(ctx context.Context, rs *resourceStore, rv string) error {
	var target int64
	switch rv {
	case "0":
		return nil
	case "":
		cur, err := rs.store.CurrentRevision(ctx)
		if err != nil {
			return storageError(err, rs.gr, "")
		}
		target = cur
	default:
		target, _ = strconv.ParseInt(rv, 10, 64)
	}
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := rs.cache.WaitForRevision(wctx, target); err != nil {
		if rv != "" {
			return newTooLargeResourceVersion()
		}
		return apierrors.NewTimeoutError("the watch cache did not catch up with storage", 1)
	}
	return nil
}

// listMatching returns the decoded objects that match lo (one page when lo
// has a limit), the list's revision and the next page's continue token.
func (s *Server) listMatching(ctx context.Context, rs *resourceStore, ns string, lo *listOptions) ([]runtime.Object, *metav1.ListMeta, error) {
	prefix := rs.keyPrefix(ns)
	filtered := !lo.labels.Empty() || !lo.fields.Empty()
	if lo.cont != nil && lo.limit > 0 && !filtered {
		return s.nextPage(ctx, rs, prefix, lo)
	}
	kvs, rev, err := s.snapshot(ctx, rs, prefix, lo)
	if err != nil {
		return nil, nil, err
	}
	sort.Slice(kvs, func(i, j int) bool { return kvs[i].Key < kvs[j].Key })
	lm := &metav1.ListMeta{ResourceVersion: strconv.FormatInt(rev, 10)}
	var out []runtime.Object
	for i, kv := range kvs {
		if lo.cont != nil && kv.Key < rs.prefix+lo.cont.StartKey {
			continue
		}
		if lo.limit > 0 && int64(len(out)) == lo.limit {
			lm.Continue = encodeContinue(rev, strings.TrimPrefix(kv.Key, rs.prefix))
			if !filtered {
				n := int64(len(kvs) - i)
				lm.RemainingItemCount = &n
			}
			break
		}
		obj, err := rs.decode(kv.Key, kv.Value, kv.ModRevision)
		if err != nil {
			return nil, nil, apierrors.NewInternalError(err)
		}
		if rs.matches(obj, lo) {
			out = append(out, obj)
		}
	}
	return out, lm, nil
}

func (s *Server) handleList(rq *request) error {
	lo, err := s.parseListOptions(rq)
	if err != nil {
		return err
	}
	items, lm, err := s.listMatching(rq.r.Context(), rq.rs, rq.info.Namespace, lo)
	if err != nil {
		return err
	}
	list := rq.rs.newList()
	if err := setListItems(list, items); err != nil {
		return apierrors.NewInternalError(err)
	}
	if la, ok := list.(metav1.ListInterface); ok {
		la.SetResourceVersion(lm.ResourceVersion)
		la.SetContinue(lm.Continue)
		la.SetRemainingItemCount(lm.RemainingItemCount)
	}
	s.writeResult(rq, http.StatusOK, list)
	return nil
}

// nextPage serves a continued, unfiltered list: one page read from storage
// at the first page's revision, starting at the token's key.
func (s *Server) nextPage(ctx context.Context, rs *resourceStore, prefix string, lo *listOptions) ([]runtime.Object, *metav1.ListMeta, error) {
	res, err := rs.store.List(ctx, prefix, storage.ListOptions{Revision: lo.cont.revision(), StartKey: rs.prefix + lo.cont.StartKey, Limit: lo.limit})
	if errors.Is(err, storage.ErrCompacted) {
		return nil, nil, continueExpired(lo.cont)
	}
	if err != nil {
		return nil, nil, storageError(err, rs.gr, "")
	}
	lm := &metav1.ListMeta{ResourceVersion: strconv.FormatInt(res.Revision, 10)}
	out := make([]runtime.Object, 0, len(res.Items))
	for _, kv := range res.Items {
		obj, err := rs.decode(kv.Key, kv.Value, kv.ModRevision)
		if err != nil {
			return nil, nil, apierrors.NewInternalError(err)
		}
		out = append(out, obj)
	}
	if res.More && len(res.Items) > 0 {
		last := res.Items[len(res.Items)-1].Key
		lm.Continue = encodeContinue(res.Revision, strings.TrimPrefix(last, rs.prefix)+"\x00")
		remaining := res.RemainingCount
		lm.RemainingItemCount = &remaining
	}
	return out, lm, nil
}
