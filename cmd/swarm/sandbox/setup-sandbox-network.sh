#!/usr/bin/env bash
# setup-sandbox-network.sh: the Docker network sandbox.sh runs on, with an allowlist. From its
# subnet only DNS, Anthropic's API (and its telemetry and error reporting) and GitHub over
# HTTPS are reachable; everything else is rejected.
#
#   sudo ./setup-sandbox-network.sh
#
# Run it again after a reboot (the rules are not kept) or when the allowed addresses change.
set -euo pipefail

network=${SANDBOX_NETWORK:-sandbox-net}
subnet=${SANDBOX_SUBNET:-172.30.0.0/24}

die() { printf 'setup-sandbox-network.sh: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run it as root: sudo ./setup-sandbox-network.sh"
for c in docker dig curl jq iptables; do
  command -v "$c" >/dev/null 2>&1 || die "'$c' is needed and not installed"
done

if docker network inspect "$network" >/dev/null 2>&1; then
  echo "network $network is there already"
else
  docker network create --driver bridge --subnet "$subnet" "$network" >/dev/null
  echo "network $network created ($subnet)"
fi

addresses() {
  local a
  a=$(dig +short "$1" | grep -E '^[0-9.]+$' | head -n 8 || true)
  [ -n "$a" ] || printf 'setup-sandbox-network.sh: warning: %s does not resolve\n' "$1" >&2
  printf '%s\n' "$a"
}

allowed=""
for host in api.anthropic.com statsig.anthropic.com statsig.com sentry.io; do
  allowed+=" $(addresses "$host")"
done
if meta=$(curl -fsS https://api.github.com/meta); then
  allowed+=" $(printf '%s' "$meta" | jq -r '(.web + .api)[] | select(test(":") | not)')"
else
  printf 'setup-sandbox-network.sh: warning: GitHub'\''s address list could not be fetched\n' >&2
fi

# Our rules are the ones that name the subnet: remove them, then add them afresh.
iptables -S DOCKER-USER | grep -F -- "$subnet" | sed 's/^-A /-D /' | while read -r rule; do
  # shellcheck disable=SC2086
  iptables $rule
done
iptables -A DOCKER-USER -s "$subnet" -j REJECT --reject-with icmp-port-unreachable
iptables -I DOCKER-USER -s "$subnet" -p udp --dport 53 -j ACCEPT
iptables -I DOCKER-USER -s "$subnet" -p tcp --dport 53 -j ACCEPT
iptables -I DOCKER-USER -s "$subnet" -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT
n=0
for dest in $allowed; do
  iptables -I DOCKER-USER -s "$subnet" -d "$dest" -p tcp --dport 443 -j ACCEPT
  n=$((n + 1))
done
echo "$network ($subnet): DNS and $n addresses on port 443 allowed (Anthropic, GitHub); the rest rejected"
