// Package cache holds gamegate's caches, free of Caddy:
//
//   - [Snapshots]: pre-serialised response bodies with their ETags, one per
//     key, replaced atomically when their content changes, read lock-free on
//     every request;
//   - the HTTP conditional-request helpers they serve with ([ETag],
//     [IfNoneMatch]);
//   - [Results]: a bounded, single-flight TTL cache of load results with
//     stale-while-revalidate, stale-if-error and negative caching, so many
//     concurrent requests for the same thing cause one upstream query.
package cache
