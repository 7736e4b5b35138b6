// Package allocator gives Services their cluster IPs and node ports, as
// the admission step of the services resource (Services.Plugin). Each
// allocated IP or port is a key in storage (/registry/ranges/...), created
// with create-if-absent, so two API servers can never hand out the same one;
// the key is removed when the Service lets it go.
package allocator
