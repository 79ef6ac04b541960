// Package caddydiscovery registers the QoS discovery handler and its
// admin API.
package caddydiscovery
