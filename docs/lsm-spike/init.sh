#!/bin/busybox sh
# The VM's /init (run.sh puts it in the initramfs): mounts what the spike
# needs, runs the four experiments of README.md, powers off.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t securityfs securityfs /sys/kernel/security
mount -t tmpfs tmp /tmp
echo "kernel $(uname -r), LSMs: $(cat /sys/kernel/security/lsm)"
cd /root
echo "=== 1: a member kills a foreign process, then an owned one"
./spike
echo "=== 2: the same, acknowledged 300 ms late"
ACK_DELAY=300ms SCRIPT='kill -9 FOREIGN; echo rc=$? >&2' ./spike
echo "=== 3: kill(own child, SIGCONT) x 20000, bare twice, then as a member twice"
./killloop 20000; ./killloop 20000
SCRIPT='/root/killloop 20000 >&2; /root/killloop 20000 >&2' ./spike
n=$(sed -n 's/.*spike\.repeat=\([0-9]*\).*/\1/p' /proc/cmdline)
echo "=== 4: ${n:=300} members each refused once and exiting at once, a CPU hog on each CPU"
(while :; do :; done) & h1=$!
(while :; do :; done) & h2=$!
REPEAT=$n SCRIPT='kill -9 FOREIGN' ./spike
kill $h1 $h2
echo "=== done"
poweroff -f
