# Sourced by the benchmark scripts that compare with GNU parallel: installs it when missing (as
# root, with apt-get); have_parallel says whether it is there.
if ! command -v parallel >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "installing GNU parallel for the side by side"
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends parallel >/dev/null; } ||
			echo "could not install GNU parallel: no side by side"
	else
		echo "GNU parallel missing and not installable here (not root, or no apt-get): no side by side"
	fi
fi
have_parallel() { command -v parallel >/dev/null 2>&1; }
