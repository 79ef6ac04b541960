// Package caddymaster registers the master server and the server lists
// (server_list, server_browser), which read game_query's gateways through
// caddyquery's gateway registry.
package caddymaster
