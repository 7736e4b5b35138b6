package openapi

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
)

// Media types of the protobuf encodings (gnostic's), in both spellings
// clients send. Responses use the spelling without '@', which Go's mime
// parser (and so client-go's response decoding) accepts.
const (
	mtV2Protobuf       = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
	mtV2ProtobufLegacy = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
	mtV3Protobuf       = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"
	mtV3ProtobufLegacy = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
)

func v2Protobuf(data []byte) ([]byte, error) {
	root, err := yamlNode(data)
	if err != nil {
		return nil, err
	}
	doc, err := openapi_v2.NewDocument(root, gnosticContext(root))
	if err != nil {
		return nil, fmt.Errorf("openapi: parsing v2 document: %w", err)
	}
	return proto.Marshal(doc)
}

func v3Protobuf(data []byte) ([]byte, error) {
	root, err := yamlNode(data)
	if err != nil {
		return nil, err
	}
	doc, err := openapi_v3.NewDocument(root, gnosticContext(root))
	if err != nil {
		return nil, fmt.Errorf("openapi: parsing v3 document: %w", err)
	}
	return proto.Marshal(doc)
}

// ServeHTTP serves
//
//   - GET /openapi/v2: the Swagger 2.0 document, as protobuf when the
//     Accept header asks for it (kubectl does), as JSON otherwise;
//   - GET /openapi/v3: the index of group versions, each with a URL that
//     carries the hash of its document;
//   - GET /openapi/v3/api/v1 and /openapi/v3/apis/<group>/<version>: one
//     group version's OpenAPI 3.0 document (JSON, or protobuf on request).
//     With ?hash= equal to the current hash the response may be cached
//     forever; with a stale hash it redirects to the current URL.
//
// Responses carry an ETag and honour If-None-Match.
func (b *Builder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case path == "/openapi/v2":
		b.serveV2(w, r)
	case path == "/openapi/v3":
		b.serveV3Index(w, r)
	case strings.HasPrefix(path, "/openapi/v3/"):
		b.serveV3Doc(w, r, strings.TrimPrefix(path, "/openapi/v3/"))
	default:
		http.NotFound(w, r)
	}
}

// negotiate reports whether the Accept header prefers one of
// protobufTypes over JSON, and whether it accepts either at all. An empty
// header means JSON. (mime.ParseMediaType rejects the '@' in gnostic's
// media types, so the header is split by hand.)
func negotiate(accept string, protobufTypes ...string) (useProto bool, ok bool) {
	if strings.TrimSpace(accept) == "" {
		return false, true
	}
	bestQ := -1.0
	for _, part := range strings.Split(accept, ",") {
		fields := strings.Split(part, ";")
		mt := strings.ToLower(strings.TrimSpace(fields[0]))
		q := 1.0
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
			if strings.TrimSpace(k) == "q" {
				var err error
				if q, err = strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
					q = 0
				}
			}
		}
		if q <= 0 || q <= bestQ {
			continue
		}
		switch {
		case mt == "application/json" || mt == "application/*" || mt == "*/*":
			useProto, bestQ = false, q
		case contains(protobufTypes, mt):
			useProto, bestQ = true, q
		}
	}
	return useProto, bestQ > 0
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// body is one encoded document with its ETag. Clients that accept gzip
// get it compressed (once, on the first such request): the documents are
// megabytes, and compress about tenfold.
type body struct {
	data        []byte
	etag        string
	contentType string

	gzOnce sync.Once
	gz     []byte
}

func (b *body) gzipped() []byte {
	b.gzOnce.Do(func() {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(b.data); err == nil && zw.Close() == nil {
			b.gz = buf.Bytes()
		}
	})
	return b.gz
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		fields := strings.Split(part, ";")
		if strings.TrimSpace(strings.ToLower(fields[0])) != "gzip" {
			continue
		}
		for _, f := range fields[1:] {
			if k, v, _ := strings.Cut(strings.TrimSpace(f), "="); k == "q" {
				if q, err := strconv.ParseFloat(v, 64); err != nil || q <= 0 {
					return false
				}
			}
		}
		return true
	}
	return false
}

// serve writes b; http.ServeContent answers If-None-Match and HEAD.
func (b *body) serve(w http.ResponseWriter, r *http.Request, modified time.Time) {
	h := w.Header()
	h.Set("Content-Type", b.contentType)
	h.Set("Vary", "Accept, Accept-Encoding")
	data, etag := b.data, b.etag
	if acceptsGzip(r) && len(b.data) > 1024 {
		if gz := b.gzipped(); gz != nil {
			data, etag = gz, b.etag+"-gzip"
			h.Set("Content-Encoding", "gzip")
		}
	}
	h.Set("Etag", `"`+etag+`"`)
	http.ServeContent(w, r, "", modified, bytes.NewReader(data))
}

func serverError(w http.ResponseWriter, err error) {
	http.Error(w, err.Error(), http.StatusInternalServerError)
}

func (b *Builder) serveV2(w http.ResponseWriter, r *http.Request) {
	useProto, ok := negotiate(r.Header.Get("Accept"), mtV2Protobuf, mtV2ProtobufLegacy)
	if !ok {
		http.Error(w, "406: Not Acceptable: "+r.Header.Get("Accept"), http.StatusNotAcceptable)
		return
	}
	st := b.state()
	doc, err := st.buildV2(b.scheme)
	if err != nil {
		serverError(w, err)
		return
	}
	if useProto {
		doc.pb.serve(w, r, st.modified)
		return
	}
	doc.json.serve(w, r, st.modified)
}

func (b *Builder) serveV3Index(w http.ResponseWriter, r *http.Request) {
	st := b.state()
	set, err := st.buildV3(b.scheme)
	if err != nil {
		serverError(w, err)
		return
	}
	set.discovery.serve(w, r, st.modified)
}

func (b *Builder) serveV3Doc(w http.ResponseWriter, r *http.Request, key string) {
	useProto, ok := negotiate(r.Header.Get("Accept"), mtV3Protobuf, mtV3ProtobufLegacy)
	if !ok {
		http.Error(w, "406: Not Acceptable: "+r.Header.Get("Accept"), http.StatusNotAcceptable)
		return
	}
	st := b.state()
	set, err := st.buildV3(b.scheme)
	if err != nil {
		serverError(w, err)
		return
	}
	doc, found := set.docs[key]
	if !found {
		http.NotFound(w, r)
		return
	}
	if hash := r.URL.Query().Get("hash"); hash != "" {
		if hash != doc.hash {
			// A stale link: send the client to the current document.
			http.Redirect(w, r, "/openapi/v3/"+key+"?hash="+doc.hash, http.StatusMovedPermanently)
			return
		}
		// The URL names this exact content, so it never changes.
		w.Header().Set("Cache-Control", "public, immutable")
		w.Header().Set("Expires", time.Now().AddDate(1, 0, 0).UTC().Format(http.TimeFormat))
	}
	if useProto {
		doc.pbOnce.Do(func() {
			var pb []byte
			pb, doc.pbErr = v3Protobuf(doc.json.data)
			doc.pb = &body{data: pb, etag: doc.hash + "-protobuf", contentType: mtV3ProtobufLegacy}
		})
		if doc.pbErr != nil {
			serverError(w, doc.pbErr)
			return
		}
		doc.pb.serve(w, r, st.modified)
		return
	}
	doc.json.serve(w, r, st.modified)
}
