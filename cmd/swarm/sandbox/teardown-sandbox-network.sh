#!/usr/bin/env bash
# teardown-sandbox-network.sh: remove what setup-sandbox-network.sh made (its firewall rules
# and the Docker network).
#
#   sudo ./teardown-sandbox-network.sh
set -euo pipefail

network=${SANDBOX_NETWORK:-sandbox-net}
subnet=${SANDBOX_SUBNET:-172.30.0.0/24}

if [ "$(id -u)" -ne 0 ]; then
  echo "teardown-sandbox-network.sh: run it as root: sudo ./teardown-sandbox-network.sh" >&2
  exit 1
fi
iptables -S DOCKER-USER 2>/dev/null | grep -F -- "$subnet" | sed 's/^-A /-D /' | while read -r rule; do
  # shellcheck disable=SC2086
  iptables $rule
done
echo "firewall rules for $subnet removed"
if docker network inspect "$network" >/dev/null 2>&1; then
  docker network rm "$network" >/dev/null
  echo "network $network removed"
fi
