#!/usr/bin/env bash
# package.test.sh - the install rules and the Debian package, end to end.
#
#   * scripts/package.sh (a fresh Release build, in the test's temporary
#     folder, configured for /usr, then `cpack -G DEB`) makes
#     hpcbridge_VERSION-1_ARCH.deb, and with HB_DEB_RELEASE=2 a -2 to
#     upgrade to;
#   * dpkg-deb -I: name, version, Depends (slurm-client of exactly this
#     Slurm release, and the libraries dpkg-shlibdeps found), every file under
#     /etc/hpcbridge a conffile, the maintainer scripts executable;
#   * dpkg-deb -c: exactly the expected files, root/root, their modes,
#     the plugins in Debian's Slurm folder, nothing the tests alone use;
#     the binaries hardened (relro, bind-now, stack protector), stripped;
#   * the real dpkg installs it into an empty root (--root R
#     --force-script-chrootless, so the maintainer scripts run with
#     DPKG_ROOT=R): files and owners under R, the state folder postinst
#     made, the qsub link;
#   * in a mount namespace where R's /etc/hpcbridge and /var/lib/hpcbridge
#     are the system's (overlays, nothing of the real / changes), the
#     installed hpcbridged --check accepts the installed configuration,
#     the installed hpcbridge validates every installed policy, and the
#     installed daemon starts with the installed configuration (pointed
#     at an installed policy and rate card) and answers the installed
#     hpcbridge;
#   * the PBS links replace stand-ins of slurm-wlm-torque's commands with
#     dpkg-divert and update-alternatives, as docs/internals/packaging.md
#     says, and are switched back;
#   * the maintainer scripts on a running system (a namespace with
#     overlays, a systemctl that logs): systemd is called only when
#     /run/systemd/system exists, try-restart only on upgrades;
#   * the upgrade to -2 keeps that edited conffile; reinstalling -2 works;
#     remove keeps the conffiles and the state; purge leaves nothing in R
#     but dpkg's own database;
#   * `cmake --install` to a scratch prefix puts exactly the expected tree
#     there and nothing elsewhere.
#
# Nothing is installed into the real /.
#
# usage: package.test.sh BUILD_DIR SRC_DIR
# The scripts run in namespaces expand their variables there.
# shellcheck disable=SC2016
set -euo pipefail

src=$(cd "${2:?SRC_DIR}" && pwd)
tmp=$(mktemp -d /tmp/hb-package.XXXXXX)
# the daemon started in a namespace writes its pid here
cleanup() {
	if [ -s "$tmp/daemon.pid" ]; then
		kill "$(cat "$tmp/daemon.pid")" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
ok() { printf 'ok: %s\n' "$*"; }
bad() {
	printf 'FAIL: %s\n' "$*"
	fails=$((fails + 1))
}
die() {
	printf 'FAIL: %s\n' "$*"
	exit 1
}
# check DESC CMD...: ok when CMD succeeds
check() {
	local what=$1
	shift
	if "$@"; then ok "$what"; else bad "$what"; fi
}

[ "$(id -u)" = 0 ] || die "needs root (dpkg --root, mount namespaces)"
b=$tmp/build
arch=$(dpkg --print-architecture)
multi=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
version=$(sed -n 's/^project(hpcbridge VERSION \([0-9.]*\).*/\1/p' \
	"$src/CMakeLists.txt")
[ -n "$version" ] || die "no version in CMakeLists.txt"

# 1. Build the package as a site does (scripts/package.sh: a fresh
# Release build for /usr), then a -2 from the same tree.
HB_JOBS=2 "$src/scripts/package.sh" "$b" "$tmp" >"$tmp/package.log" 2>&1 ||
	{ tail -20 "$tmp/package.log"; die "scripts/package.sh"; }
deb1=$tmp/hpcbridge_${version}-1_$arch.deb
[ -f "$deb1" ] || die "no $(basename "$deb1"): $(ls "$tmp")"
HB_JOBS=2 HB_DEB_RELEASE=2 "$src/scripts/package.sh" "$b" "$tmp" \
	>>"$tmp/package.log" 2>&1 || die "scripts/package.sh, -2"
deb2=$tmp/hpcbridge_${version}-2_$arch.deb
[ -f "$deb2" ] || die "no $(basename "$deb2")"
ok "built $(basename "$deb1") ($(stat -c %s "$deb1") bytes) and -2"

# 2. Its control data.
field() { dpkg-deb -f "$deb1" "$1"; }
check "Package: hpcbridge" [ "$(field Package)" = hpcbridge ]
check "Version: $version-1" [ "$(field Version)" = "$version-1" ]
check "Architecture: $arch" [ "$(field Architecture)" = "$arch" ]
deps=$(field Depends)
# slurm-client of exactly this Slurm release (x.y.z, not x.y.z+1)
snum=$(sed -n 's/^#define SLURM_VERSION_NUMBER \(0x[0-9a-f]*\)/\1/p' \
	/usr/include/slurm/slurm_version.h)
srel=$(printf '%d.%02d' $((snum >> 16 & 255)) $((snum >> 8 & 255)))
smic=$((snum & 255))
for d in "slurm-client (>= $srel.$smic)" \
	 "slurm-client (<< $srel.$((smic + 1))~)" "libslurm" \
	 "libc6 (>=" "libcjson1" "libyaml-0-2" "libsqlite3-0" "libcurl4" \
	 "libsystemd0"; do
	case "$deps" in
	*"$d"*) ok "Depends has $d" ;;
	*) bad "Depends lacks '$d': $deps" ;;
	esac
done
mkdir "$tmp/control"
dpkg-deb -e "$deb1" "$tmp/control"
for s in postinst prerm postrm; do
	check "$s is an executable script" test -x "$tmp/control/$s"
	check "$s passes sh -n" sh -n "$tmp/control/$s"
done

# 3. Its files: exactly these, root/root, these modes.
pd=usr/lib/$multi/slurm-wlm
expect_files() { # the package's files and links, with modes
	cat <<EOF
-rw-r--r-- etc/hpcbridge/hpcbridge.yaml
$(for f in "$src"/config/policies/*.yaml; do
	echo "-rw-r--r-- etc/hpcbridge/policies/${f##*/}"
done)
$(for f in "$src"/config/ratecards/*.yaml; do
	echo "-rw-r--r-- etc/hpcbridge/ratecards/${f##*/}"
done)
-rw-r--r-- lib/systemd/system/hpcbridged.service
-rwxr-xr-x usr/bin/hpcbridge
-rw-r--r-- $pd/job_submit_hpcbridge.so
-rw-r--r-- $pd/spank_hpcbridge.so
lrwxrwxrwx usr/libexec/hpcbridge/pbs/qdel
lrwxrwxrwx usr/libexec/hpcbridge/pbs/qstat
lrwxrwxrwx usr/libexec/hpcbridge/pbs/qsub
-rwxr-xr-x usr/sbin/hpcbridged
-rw-r--r-- usr/share/bash-completion/completions/hpcbridge
-rw-r--r-- usr/share/man/man1/hpcbridge.1.gz
-rw-r--r-- usr/share/man/man5/hpcbridge-policy.5.gz
-rw-r--r-- usr/share/man/man5/hpcbridge.yaml.5.gz
-rw-r--r-- usr/share/man/man8/hpcbridged.8.gz
EOF
}
expect_files | sort -k2 >"$tmp/want"
dpkg-deb -c "$deb1" >"$tmp/contents"
awk '$1 !~ /^d/ { sub("^\\./", "", $6); print $1, $6 }' "$tmp/contents" |
	sort -k2 >"$tmp/got"
if diff -u "$tmp/want" "$tmp/got"; then
	ok "the package holds exactly $(wc -l <"$tmp/want") files and links"
else
	bad "the package's files (diff above: - expected, + found)"
fi
check "every entry is root/root" \
	[ -z "$(awk '$2 != "root/root"' "$tmp/contents")" ]
check "every folder is 0755" \
	[ -z "$(awk '$1 ~ /^d/ && $1 != "drwxr-xr-x"' "$tmp/contents")" ]
check "the links point at ../../../bin/hpcbridge" \
	[ "$(grep -c 'pbs/q[a-z]* -> \.\./\.\./\.\./bin/hpcbridge$' \
		"$tmp/contents")" = 3 ]
grep '^-rw-r--r-- etc/' "$tmp/want" | sed 's|^[^ ]* |/|' | sort \
	>"$tmp/want.conffiles"
if sort "$tmp/control/conffiles" | diff -u "$tmp/want.conffiles" -; then
	ok "every file under /etc/hpcbridge is a conffile, and only those"
else
	bad "conffiles (diff above)"
fi
for f in hb-kubemu kubemu hbcall fake_hbd; do
	if grep -q "/$f\$" "$tmp/contents"; then bad "$f is packaged"; fi
done

# The binaries: Debian's hardening flags (scripts/package.sh), stripped,
# the plugins still exporting what Slurm looks up.
mkdir "$tmp/x"
dpkg-deb -x "$deb1" "$tmp/x"
for f in usr/sbin/hpcbridged usr/bin/hpcbridge $pd/job_submit_hpcbridge.so \
	 $pd/spank_hpcbridge.so; do
	e=$tmp/x/$f
	check "${f##*/}: relro and bind-now" sh -c \
		"readelf -lW '$e' | grep -q GNU_RELRO &&
		 readelf -dW '$e' | grep -Eq 'BIND_NOW|FLAGS_1.*NOW'"
	check "${f##*/}: stack protector" sh -c \
		"readelf -sW --dyn-syms '$e' | grep -q __stack_chk_fail"
	check "${f##*/}: stripped" sh -c "! readelf -SW '$e' | grep -q '\.symtab'"
done
check "the job_submit plugin exports plugin_version, job_submit" sh -c \
	"nm -D --defined-only '$tmp/x/$pd/job_submit_hpcbridge.so' |
	 grep -q ' plugin_version\$' &&
	 nm -D --defined-only '$tmp/x/$pd/job_submit_hpcbridge.so' |
	 grep -q ' job_submit\$'"

# 4. Install into an empty root with the real dpkg.  The maintainer
# scripts run outside a chroot with DPKG_ROOT=$R (R has no shell).
R=$tmp/root
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" \
	"$R/var/lib/dpkg/triggers"
touch "$R/var/lib/dpkg/status" "$R/var/lib/dpkg/available"
# Dependencies (slurm-client, the libraries) are this host's, not R's.
rdpkg() {
	dpkg --root="$R" --log="$tmp/dpkg.log" --force-script-chrootless \
		--force-depends "$@" </dev/null
}
rdpkg -i "$deb1" >"$tmp/dpkg.out" 2>&1 ||
	{ cat "$tmp/dpkg.out"; die "dpkg -i $(basename "$deb1")"; }
check "dpkg says installed" [ "$(dpkg-query --admindir="$R/var/lib/dpkg" \
	-W -f='${Status} ${Version}' hpcbridge)" = \
	"install ok installed $version-1" ]
while read -r mode path; do
	p=$R/$path
	got=$(stat -c '%A %U:%G' "$p" 2>/dev/null || echo missing)
	[ "$got" = "$mode root:root" ] || bad "$path: $got, want $mode root:root"
done <"$tmp/want"
ok "$(wc -l <"$tmp/want") files in R with their modes, root:root"
check "postinst made /var/lib/hpcbridge 0711 root:root" \
	[ "$(stat -c '%a %U:%G' "$R/var/lib/hpcbridge")" = "711 root:root" ]
check "qstat link runs the installed hpcbridge" \
	sh -c "'$R/usr/libexec/hpcbridge/pbs/qstat' --help 2>&1 | grep -q qstat"
check "hpcbridge --version says $version" \
	[ "$("$R/usr/bin/hpcbridge" --version)" = "hpcbridge $version" ]
check "man reads hpcbridged(8)" \
	sh -c "man -l '$R/usr/share/man/man8/hpcbridged.8.gz' 2>/dev/null |
		grep -q hpcbridged"

check "the installed completion completes hpcbridge" bash -c "
	. /usr/share/bash-completion/bash_completion
	. '$R/usr/share/bash-completion/completions/hpcbridge'
	complete -p hpcbridge >/dev/null"

# in_ns [ENV-ARGS...] SCRIPT: run SCRIPT (bash) in a mount namespace that
# sees the real / but for /etc and /var/lib, overlays whose writes go to
# $tmp/ov, and /run, a fresh tmpfs; nothing of the real / changes.  OV
# and T ($tmp) are set there, and what env(1) ENV-ARGS say.
in_ns() {
	rm -rf "$tmp/ov"
	mkdir -p "$tmp/ov/etc" "$tmp/ov/etcw" "$tmp/ov/var" "$tmp/ov/varw"
	local script=${*: -1}
	unshare -m --propagation private env "${@:1:$#-1}" OV="$tmp/ov" \
		T="$tmp" bash -c '
		set -e
		mount -t overlay overlay -o "lowerdir=/etc,upperdir=$OV/etc,workdir=$OV/etcw" /etc
		mount -t overlay overlay -o "lowerdir=/var/lib,upperdir=$OV/var,workdir=$OV/varw" /var/lib
		mount -t tmpfs tmpfs /run
		'"$script"
}
# in_root SCRIPT: in_ns, with R's /etc/hpcbridge and /var/lib/hpcbridge
# at their places.
in_root() {
	in_ns R="$R" '
		mkdir -p /etc/hpcbridge /var/lib/hpcbridge
		mount --bind "$R/etc/hpcbridge" /etc/hpcbridge
		mount --bind "$R/var/lib/hpcbridge" /var/lib/hpcbridge
		'"$1"
}

# 5. The installed programs with the installed configuration.
if in_root '"$R/usr/sbin/hpcbridged" --check --config /etc/hpcbridge/hpcbridge.yaml' \
	>"$tmp/check.out" 2>&1 &&
	grep -qx '/etc/hpcbridge/hpcbridge.yaml: ok' "$tmp/check.out"; then
	ok "installed hpcbridged --check accepts /etc/hpcbridge/hpcbridge.yaml"
else
	bad "hpcbridged --check: $(cat "$tmp/check.out")"
fi
for f in "$R"/etc/hpcbridge/policies/*.yaml; do
	n=/etc/hpcbridge/policies/${f##*/}
	if in_root '"$R/usr/bin/hpcbridge" policy check '"$n" \
		>"$tmp/policy.out" 2>&1; then
		ok "installed hpcbridge accepts $n"
	else
		bad "policy check $n: $(cat "$tmp/policy.out")"
	fi
done
# A site's edit: the installed policy and rate card, by their paths.
cat >>"$R/etc/hpcbridge/hpcbridge.yaml" <<'EOF'
# site: placement and chargeback from the installed examples
EOF
sed -i -e 's|^  policy: null|  policy: /etc/hpcbridge/policies/full.yaml|' \
	-e 's|^  ratecard: null|  ratecard: /etc/hpcbridge/ratecards/example.yaml|' \
	"$R/etc/hpcbridge/hpcbridge.yaml"
check "the edit took" grep -q '^  ratecard: /etc/hpcbridge/ratecards/example.yaml' \
	"$R/etc/hpcbridge/hpcbridge.yaml"
# The installed daemon, started as the service starts it, answers the
# installed command over the socket the installed config names (it
# refuses to start when the policy or the rate card does not load).
if in_root '
	"$R/usr/sbin/hpcbridged" --foreground \
		--config /etc/hpcbridge/hpcbridge.yaml 2>"$T/daemon.log" &
	pid=$!
	echo $pid >"$T/daemon.pid"
	for _ in $(seq 100); do
		[ -S /run/hpcbridge/hpcbridged.sock ] && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.1
	done
	rc=0
	timeout 20 "$R/usr/bin/hpcbridge" jobs >"$T/jobs.out" 2>&1 || rc=$?
	kill $pid
	wait $pid || true
	rm "$T/daemon.pid"
	exit $rc' >"$tmp/run.out" 2>&1; then
	ok "installed hpcbridged serves; installed hpcbridge jobs answers"
else
	bad "daemon from the installed files: $(cat "$tmp/run.out" \
		"$tmp/jobs.out" 2>/dev/null; tail -5 "$tmp/daemon.log")"
fi
check "its state is in R's /var/lib/hpcbridge" \
	test -s "$R/var/lib/hpcbridge/state.db"

# The recipe of docs/internals/packaging.md that makes the PBS links the
# system's qsub, qstat and qdel in place of slurm-wlm-torque's (here
# stand-ins in R): diversions, then alternatives between the two.
pbs=/usr/libexec/hpcbridge/pbs
for q in qsub qstat qdel; do
	printf '#!/bin/sh\necho torque %s\n' "$q" >"$R/usr/bin/$q"
	chmod 755 "$R/usr/bin/$q"
	dpkg-divert --root="$R" --local --rename \
		--divert "/usr/bin/$q.torque" --add "/usr/bin/$q" >/dev/null
done
# (--log is inside R, as the other paths)
ua() { update-alternatives --root "$R" --log /alternatives.log "$@"; }
ua --install /usr/bin/qsub qsub "$pbs/qsub" 60 \
	--slave /usr/bin/qstat qstat "$pbs/qstat" \
	--slave /usr/bin/qdel qdel "$pbs/qdel" >/dev/null
ua --install /usr/bin/qsub qsub /usr/bin/qsub.torque 40 \
	--slave /usr/bin/qstat qstat /usr/bin/qstat.torque \
	--slave /usr/bin/qdel qdel /usr/bin/qdel.torque >/dev/null
# alt_target Q: where R's /usr/bin/Q leads, inside R
alt_target() { readlink "$R$(readlink "$R/usr/bin/$1")"; }
for q in qsub qstat qdel; do
	check "alternatives: /usr/bin/$q is hpcbridge's" \
		[ "$(alt_target "$q")" = "$pbs/$q" ]
done
check "the diverted torque qsub is kept" \
	grep -q 'torque qsub' "$R/usr/bin/qsub.torque"
ua --set qsub /usr/bin/qsub.torque >/dev/null
check "alternatives: --set back to torque's qdel" \
	[ "$(alt_target qdel)" = /usr/bin/qdel.torque ]
ua --remove-all qsub >/dev/null
for q in qsub qstat qdel; do
	dpkg-divert --root="$R" --local --rename --remove "/usr/bin/$q" \
		>/dev/null
	rm -f "$R/usr/bin/$q"
done
rm -rf "$R/etc/alternatives" "$R/var/lib/dpkg/alternatives" \
	"$R/alternatives.log"
check "undone: no diversion left" \
	[ -z "$(dpkg-divert --root="$R" --list 'hpcbridge*' ; \
		dpkg-divert --root="$R" --list '*qsub*')" ]

# The maintainer scripts on a running system (DPKG_ROOT empty), in a
# mount namespace where /etc and /var/lib are overlays and /run a tmpfs,
# with a systemctl that only logs: no systemd calls without
# /run/systemd/system (a chroot, a container); with it, daemon-reload,
# try-restart only on an upgrade, stop on remove; purge takes the state,
# the site's files and the enable link.
mkdir -p "$tmp/stub"
printf '#!/bin/sh\necho "systemctl $*" >>"%s"\n' "$tmp/systemctl.log" \
	>"$tmp/stub/systemctl"
chmod 755 "$tmp/stub/systemctl"
in_ns -u DPKG_ROOT C="$tmp/control" PATH="$tmp/stub:$PATH" '
	sh "$C/postinst" configure ""
	echo "-- systemd" >>"$T/systemctl.log"
	mkdir -p /run/systemd/system
	rm -rf /var/lib/hpcbridge
	sh "$C/postinst" configure ""
	stat -c "%a %U:%G" /var/lib/hpcbridge >"$T/state.mode"
	echo "-- upgrade" >>"$T/systemctl.log"
	sh "$C/postinst" configure 0.1.0-1
	echo "-- remove" >>"$T/systemctl.log"
	sh "$C/prerm" remove
	sh "$C/postrm" remove
	echo "-- purge" >>"$T/systemctl.log"
	mkdir -p /etc/hpcbridge /etc/systemd/system/multi-user.target.wants
	echo site >/etc/hpcbridge/site.yaml
	ln -sf /lib/systemd/system/hpcbridged.service \
		/etc/systemd/system/multi-user.target.wants/hpcbridged.service
	touch /var/lib/hpcbridge/state.db
	sh "$C/postrm" purge
	for p in /etc/hpcbridge /var/lib/hpcbridge \
		 /etc/systemd/system/multi-user.target.wants/hpcbridged.service; do
		if [ -e "$p" ] || [ -L "$p" ]; then echo "$p"; fi
	done >"$T/purge.left"
' >"$tmp/scripts.out" 2>&1 || { cat "$tmp/scripts.out"; die "the scripts"; }
cat >"$tmp/systemctl.want" <<'EOF'
-- systemd
systemctl --system daemon-reload
-- upgrade
systemctl --system daemon-reload
systemctl try-restart hpcbridged.service
-- remove
systemctl stop hpcbridged.service
systemctl --system daemon-reload
-- purge
systemctl --system daemon-reload
EOF
if diff -u "$tmp/systemctl.want" "$tmp/systemctl.log"; then
	ok "the scripts call systemd only when it runs, as they should"
else
	bad "the scripts' systemctl calls (diff above)"
fi
check "postinst on the running system: /var/lib/hpcbridge 711 root:root" \
	[ "$(cat "$tmp/state.mode")" = "711 root:root" ]
check "postrm purge on the running system left nothing" \
	[ ! -s "$tmp/purge.left" ]

# 6. Upgrade to -2: the edited conffile stays; reinstalling works.
cp "$R/etc/hpcbridge/hpcbridge.yaml" "$tmp/edited.yaml"
rdpkg -i "$deb2" >"$tmp/dpkg.out" 2>&1 ||
	{ cat "$tmp/dpkg.out"; die "upgrade to -2"; }
check "upgraded to $version-2" [ "$(dpkg-query --admindir="$R/var/lib/dpkg" \
	-W -f='${Version}' hpcbridge)" = "$version-2" ]
check "the upgrade kept the edited hpcbridge.yaml" \
	cmp -s "$tmp/edited.yaml" "$R/etc/hpcbridge/hpcbridge.yaml"
check "and the state" test -s "$R/var/lib/hpcbridge/state.db"
rdpkg -i "$deb2" >"$tmp/dpkg.out" 2>&1 ||
	{ cat "$tmp/dpkg.out"; die "reinstall -2"; }
ok "reinstalling $version-2"
check "still the edited hpcbridge.yaml" \
	cmp -s "$tmp/edited.yaml" "$R/etc/hpcbridge/hpcbridge.yaml"

# 7. Remove keeps the site's configuration and state; purge takes all.
rdpkg -r hpcbridge >"$tmp/dpkg.out" 2>&1 ||
	{ cat "$tmp/dpkg.out"; die "dpkg -r"; }
check "removed: config-files" [ "$(dpkg-query --admindir="$R/var/lib/dpkg" \
	-W -f='${Status}' hpcbridge)" = "deinstall ok config-files" ]
check "remove took the programs" test ! -e "$R/usr/sbin/hpcbridged"
check "remove kept the conffiles" test -f "$R/etc/hpcbridge/hpcbridge.yaml"
check "remove kept the state" test -s "$R/var/lib/hpcbridge/state.db"
echo "site file" >"$R/etc/hpcbridge/site-notes"
rdpkg -P hpcbridge >"$tmp/dpkg.out" 2>&1 ||
	{ cat "$tmp/dpkg.out"; die "dpkg -P"; }
left=$(cd "$R" && find . -mindepth 1 ! -path './var' ! -path './var/lib' \
	! -path './var/lib/dpkg' ! -path './var/lib/dpkg/*')
if [ -z "$left" ]; then
	ok "purge left nothing in R but dpkg's database"
else
	bad "purge left: $left"
fi
check "dpkg's database forgot hpcbridge" \
	[ -z "$(find "$R/var/lib/dpkg/info" -name 'hpcbridge.*')" ]

# 8. cmake --install to a scratch prefix: the same tree, all under it.
P=$tmp/prefix
cmake -S "$src" -B "$b" -DCMAKE_INSTALL_PREFIX="$P" \
	-DHB_SLURM_PLUGINDIR="$P/lib/slurm-wlm" >"$tmp/cmake.log" 2>&1 ||
	die "configure for $P"
# First staged (DESTDIR), so a destination outside the prefix is caught
# before anything is written there.
DESTDIR=$tmp/stage cmake --install "$b" >"$tmp/install.log" 2>&1 ||
	{ tail "$tmp/install.log"; die "cmake --install (staged)"; }
outside=$(cd "$tmp/stage" && find . ! -type d ! -path ".$P/*")
[ -z "$outside" ] || die "installed outside the prefix: $outside"
cmake --install "$b" --prefix "$P" >"$tmp/install.log" 2>&1 ||
	{ tail "$tmp/install.log"; die "cmake --install --prefix"; }
expect_files | sed -e 's|^\([^ ]*\) etc/|\1 etc/|' \
	-e 's| lib/systemd/| lib/systemd/|' -e "s| $pd/| lib/slurm-wlm/|" \
	-e 's| usr/| |' | sort -k2 >"$tmp/want.prefix"
(cd "$P" && find . ! -type d -printf '%M %P\n') | sort -k2 >"$tmp/got.prefix"
if diff -u "$tmp/want.prefix" "$tmp/got.prefix"; then
	ok "cmake --install --prefix: exactly $(wc -l <"$tmp/got.prefix") files under the prefix"
else
	bad "the prefix's tree (diff above)"
fi
check "the prefix's qsub link resolves to its hpcbridge" \
	[ "$(readlink -f "$P/libexec/hpcbridge/pbs/qsub")" = "$P/bin/hpcbridge" ]

if [ "$fails" -ne 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
echo "all checks passed"
