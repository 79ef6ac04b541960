// Package caddystorage registers the Redis storage (caddy.storage.redis).
package caddystorage
