// Package cache holds gamegate's caches: the ETag snapshot store and the TTL, single-flight result cache.
package cache
