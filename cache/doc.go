// Package cache holds gamegate's caches, free of Caddy:
//
//   - [Snapshots]: pre-serialised response bodies with their ETags, one per
//     key, replaced atomically when their content changes, read lock-free on
//     every request;
//   - the HTTP conditional-request helpers they serve with ([ETag],
//     [IfNoneMatch]).
package cache
