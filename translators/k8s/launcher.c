/*
 * launcher.c - the launcher script that runs an unchanged job script in the
 * MPIJob launcher pod.
 *
 * The output is one POSIX sh program, given to the launcher container as
 * `sh -c TEXT`.  It has three parts:
 *
 *   1. A fixed runtime (RUNTIME below), written to $hb_dir/lib.sh in a
 *      private directory and sourced.  It parses the hostfile, exports the
 *      SLURM_* and PBS_* variables, writes $PBS_NODEFILE and the
 *      normalised hostfiles, and provides the mpirun, mpiexec, srun,
 *      scontrol and module wrappers put first on PATH.
 *   2. The job's own values (name, ids, array, memory, GPUs, environment),
 *      each single-quoted, as shell assignments.
 *   3. The original script between quoted heredoc markers, then
 *      "hb_run N", which fixes up a missing final newline (N = 1), enters
 *      the working directory and execs the script's own interpreter.
 *
 * User data never appears inside the runtime's heredoc or in a comment;
 * outside heredocs it is always single-quoted.  The script's heredoc
 * delimiter occurs nowhere in the script, so hb_launcher_extract() can
 * find the script again from the end of the text.
 * docs/internals/launcher.md describes the runtime's behaviour.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "hpcbridge/bytes.h"
#include "hpcbridge/hash.h"
#include "hpcbridge/launcher.h"

/* First line of every launcher script: hb_launcher_extract() checks it. */
#define MAGIC	   "# hpcbridge launcher 1\n"
#define DELIM_BASE "HPCBRIDGE_EOF"
#define DELIM_MAX  48
#define TRAILER	   "\nhb_run "
/* Name of the job script file, as $0 sees it (Slurm's own name). */
#define SCRIPT_NAME "slurm_script"

/* The runtime, written to $hb_dir/lib.sh.  Keep it free of user data. */
/* clang-format off */
static const char RUNTIME[] =
	"hb_fail() { hb_note \"$@\"; exit 1; }\n"
	"hb_note() { printf 'hpcbridge: %s\\n' \"$*\" >&2; }\n"
	"hb_once() {\n"
	"\tif [ -f \"$hb_dir/noted\" ]; then\n"
	"\t\twhile IFS= read -r hb_x; do\n"
	"\t\t\t[ \"$hb_x\" = \"$1\" ] && return 0\n"
	"\t\tdone <\"$hb_dir/noted\"\n"
	"\tfi\n"
	"\tprintf '%s\\n' \"$1\" >>\"$hb_dir/noted\"\n"
	"\tshift\n"
	"\thb_note \"$@\"\n"
	"}\n"
	"hb_env_names() {\n"
	"\tenv | while IFS= read -r hb_x; do\n"
	"\t\tcase $hb_x in *=*) ;; *) continue ;; esac\n"
	"\t\thb_x=${hb_x%%=*}\n"
	"\t\tcase $hb_x in ''|[0-9]*|*[!A-Za-z0-9_]*) continue ;; esac\n"
	"\t\tprintf '%s\\n' \"$hb_x\"\n"
	"\tdone\n"
	"}\n"
	"hb_isset() { eval \"[ -n \\\"\\${$1+x}\\\" ]\"; }\n"
	"hb_unset_rm() {\n"
	"\tfor hb_x in $(hb_env_names); do\n"
	"\t\tcase $hb_x in SLURM*|PBS_*) unset \"$hb_x\" ;; esac\n"
	"\tdone\n"
	"}\n"
	"hb_fwd_list() {\n"
	"\thb_fwd=\n"
	"\tfor hb_x in $(hb_env_names) $hb_fwd_names; do\n"
	"\t\tcase $hb_x in\n"
	"\t\tNCCL_*|UCX_*|OMP_*|FI_*|I_MPI_*|MKL_*) ;;\n"
	"\t\tSLURM*|PBS_*) continue ;;\n"
	"\t\t*) case \" $hb_fwd_names \" in *\" $hb_x \"*) ;; *) continue ;; "
	"esac ;;\n"
	"\t\tesac\n"
	"\t\tcase \" $hb_fwd \" in *\" $hb_x \"*) continue ;; esac\n"
	"\t\thb_isset \"$hb_x\" && hb_fwd=\"$hb_fwd $hb_x\"\n"
	"\tdone\n"
	"}\n"
	"hb_find_real() {\n"
	"\thb_real=\n"
	"\thb_ifs=$IFS\n"
	"\tIFS=:\n"
	"\tset -f\n"
	"\tfor hb_x in ${PATH:-/usr/bin:/bin}; do\n"
	"\t\t[ -n \"$hb_x\" ] || hb_x=.\n"
	"\t\tcase $hb_x in \"$hb_dir/bin\"|\"$hb_dir/bin/\") continue ;; esac\n"
	"\t\tif [ -f \"$hb_x/$1\" ] && [ -x \"$hb_x/$1\" ] &&\n"
	"\t\t    ! [ \"$hb_x/$1\" -ef \"$hb_dir/bin/$1\" ]; then\n"
	"\t\t\thb_real=$hb_x/$1\n"
	"\t\t\tbreak\n"
	"\t\tfi\n"
	"\tdone\n"
	"\tIFS=$hb_ifs\n"
	"\tset +f\n"
	"\t[ -n \"$hb_real\" ]\n"
	"}\n"
	"hb_flavor() {\n"
	"\tcase ${HPCBRIDGE_MPI_FLAVOR-} in\n"
	"\tompi|intel|mpich) hb_fl=$HPCBRIDGE_MPI_FLAVOR; return 0 ;;\n"
	"\tesac\n"
	"\tif [ -f \"$hb_dir/flavors\" ]; then\n"
	"\t\twhile read -r hb_y hb_z; do\n"
	"\t\t\t[ \"$hb_z\" = \"$1\" ] && hb_fl=$hb_y && return 0\n"
	"\t\tdone <\"$hb_dir/flavors\"\n"
	"\tfi\n"
	"\tcase $(\"$1\" --version 2>&1 </dev/null) in\n"
	"\t*\"Open MPI\"*|*OpenRTE*|*PRRTE*) hb_fl=ompi ;;\n"
	"\t*Intel*) hb_fl=intel ;;\n"
	"\t*HYDRA*|*hydra*|*MPICH*) hb_fl=mpich ;;\n"
	"\t*) hb_fl=$hb_default_flavor ;;\n"
	"\tesac\n"
	"\tprintf '%s %s\\n' \"$hb_fl\" \"$1\" >>\"$hb_dir/flavors\"\n"
	"}\n"
	"hb_has_hosts() {\n"
	"\twhile [ $# -gt 0 ]; do\n"
	"\t\tcase $1 in\n"
	"\t\t-f|-hostfile|--hostfile|-machinefile|--machinefile|-machine|\\\n"
	"\t\t--machine|-H|-host|--host|-hosts|--hosts|-default-hostfile|\\\n"
	"\t\t--default-hostfile|-hostfile=*|--hostfile=*|--machinefile=*|\\\n"
	"\t\t--host=*|--hosts=*|--default-hostfile=*|-rf|--rankfile|\\\n"
	"\t\t--rankfile=*)\n"
	"\t\t\treturn 0 ;;\n"
	"\t\t--|:) return 1 ;;\n"
	"\t\t--mca|-mca|--gmca|-gmca|--prtemca|-prtemca|--pmixmca|\\\n"
	"\t\t-pmixmca|-genv|-env)\n"
	"\t\t\t[ $# -ge 3 ] || return 1\n"
	"\t\t\tshift 2 ;;\n"
	"\t\t-np|--np|-n|--n|-c|-N|-npernode|--npernode|-npersocket|\\\n"
	"\t\t--npersocket|-map-by|--map-by|-rank-by|--rank-by|-bind-to|\\\n"
	"\t\t--bind-to|-x|-wdir|--wdir|-wd|--wd|-ppn|-perhost|-genvlist|\\\n"
	"\t\t-envlist|-prefix|--prefix|-output-filename|--output-filename|\\\n"
	"\t\t-app|--app|--preload-files|-configfile|-iface|-bootstrap|\\\n"
	"\t\t-bootstrap-exec|-launcher|-launcher-exec|-rmk|-tune|-am|\\\n"
	"\t\t--am|-tmpdir|--tmpdir|-path|--path|-timeout|--timeout|\\\n"
	"\t\t-report-pid|--report-pid|-report-uri|--report-uri)\n"
	"\t\t\t[ $# -ge 2 ] || return 1\n"
	"\t\t\tshift ;;\n"
	"\t\t-*) ;;\n"
	"\t\t*) return 1 ;;\n"
	"\t\tesac\n"
	"\t\tshift\n"
	"\tdone\n"
	"\treturn 1\n"
	"}\n"
	"hb_launch() {\n"
	"\thb_unset_rm\n"
	"\tif [ \"$hb_fl\" = ompi ]; then\n"
	"\t\thb_fwd_list\n"
	"\t\tfor hb_x in $hb_fwd; do\n"
	"\t\t\tset -- -x \"$hb_x\" \"$@\"\n"
	"\t\tdone\n"
	"\tfi\n"
	"\texec \"$hb_real\" \"$@\"\n"
	"}\n"
	"hb_cmd_mpirun() { hb_mpi mpirun \"$@\"; }\n"
	"hb_cmd_mpiexec() { hb_mpi mpiexec \"$@\"; }\n"
	"hb_mpi() {\n"
	"\thb_x=$1\n"
	"\tshift\n"
	"\thb_find_real \"$hb_x\" || hb_find_real mpirun || hb_find_real "
	"mpiexec ||\n"
	"\t    { hb_note \"$hb_x: no MPI launcher found on PATH\"; exit 127; "
	"}\n"
	"\thb_flavor \"$hb_real\"\n"
	"\tif ! hb_has_hosts \"$@\"; then\n"
	"\t\tif [ \"$hb_fl\" = ompi ]; then\n"
	"\t\t\tset -- --hostfile \"$hb_dir/hostfile\" \"$@\"\n"
	"\t\telse\n"
	"\t\t\tset -- -f \"$hb_dir/hostfile.hydra\" \"$@\"\n"
	"\t\tfi\n"
	"\tfi\n"
	"\thb_launch \"$@\"\n"
	"}\n"
	"hb_expand1() (\n"
	"\tcase $1 in\n"
	"\t*\\[*\\]*) ;;\n"
	"\t*) printf '%s\\n' \"$1\"; exit 0 ;;\n"
	"\tesac\n"
	"\thb_p=${1%%\\[*}\n"
	"\thb_r=${1#*\\[}\n"
	"\thb_s=${hb_r#*\\]}\n"
	"\thb_r=${hb_r%%\\]*}\n"
	"\tIFS=,\n"
	"\tset -f\n"
	"\tfor hb_e in $hb_r; do\n"
	"\t\tcase $hb_e in\n"
	"\t\t*[!0-9-]*|-*|*-|*-*-*|'')\n"
	"\t\t\thb_expand1 \"$hb_p$hb_e$hb_s\"; continue ;;\n"
	"\t\t*-*) hb_a=${hb_e%-*}; hb_b=${hb_e#*-} ;;\n"
	"\t\t*) hb_a=$hb_e; hb_b=$hb_e ;;\n"
	"\t\tesac\n"
	"\t\thb_w=${#hb_a}\n"
	"\t\thb_i=${hb_a#\"${hb_a%%[!0]*}\"}\n"
	"\t\thb_j=${hb_b#\"${hb_b%%[!0]*}\"}\n"
	"\t\tif [ ${#hb_i} -gt 9 ] || [ ${#hb_j} -gt 9 ]; then\n"
	"\t\t\thb_expand1 \"$hb_p$hb_e$hb_s\"; continue\n"
	"\t\tfi\n"
	"\t\thb_i=$((${hb_i:-0} + 0))\n"
	"\t\thb_j=$((${hb_j:-0} + 0))\n"
	"\t\twhile [ \"$hb_i\" -le \"$hb_j\" ]; do\n"
	"\t\t\thb_n=$hb_i\n"
	"\t\t\twhile [ ${#hb_n} -lt \"$hb_w\" ]; do hb_n=0$hb_n; done\n"
	"\t\t\thb_expand1 \"$hb_p$hb_n$hb_s\"\n"
	"\t\t\thb_i=$((hb_i + 1))\n"
	"\t\tdone\n"
	"\tdone\n"
	")\n"
	"hb_expand() {\n"
	"\thb_acc=\n"
	"\thb_ifs=$IFS\n"
	"\tIFS=,\n"
	"\tset -f\n"
	"\tfor hb_x in $1; do\n"
	"\t\thb_acc=${hb_acc:+$hb_acc,}$hb_x\n"
	"\t\tcase ${hb_acc##*\\[} in *\\]*) ;; \"$hb_acc\") ;; *) continue ;; "
	"esac\n"
	"\t\t[ -n \"$hb_acc\" ] && hb_expand1 \"$hb_acc\"\n"
	"\t\thb_acc=\n"
	"\tdone\n"
	"\t[ -n \"$hb_acc\" ] && hb_expand1 \"$hb_acc\"\n"
	"\tIFS=$hb_ifs\n"
	"\tset +f\n"
	"}\n"
	"hb_cmd_scontrol() {\n"
	"\tcase ${1-}:${2-} in\n"
	"\tshow:hostnames|show:hostname)\n"
	"\t\thb_expand \"${3-${SLURM_JOB_NODELIST-}}\"\n"
	"\t\texit 0 ;;\n"
	"\tshow:hostlist|show:hostlistsorted)\n"
	"\t\thb_x=\n"
	"\t\tfor hb_y in $(hb_expand \"${3-}\"); do\n"
	"\t\t\thb_x=${hb_x:+$hb_x,}$hb_y\n"
	"\t\tdone\n"
	"\t\tprintf '%s\\n' \"$hb_x\"\n"
	"\t\texit 0 ;;\n"
	"\tesac\n"
	"\thb_note \"scontrol: only 'scontrol show hostnames' is available in "
	"this job\"\n"
	"\texit 1\n"
	"}\n"
	"hb_cmd_module() {\n"
	"\tcase ${1-} in\n"
	"\tload|add|try-load|unload|rm|del|swap|switch|purge|use|unuse|restore)"
	"\n"
	"\t\thb_once \"module $1\" \"'module $1' has no effect here: the "
	"container image provides the software\" ;;\n"
	"\tesac\n"
	"\texit 0\n"
	"}\n"
	"hb_cmd_ml() {\n"
	"\tcase ${1-} in\n"
	"\t'') set -- list ;;\n"
	"\t-*) ;;\n"
	"\tload|add|try-load|unload|rm|del|swap|switch|purge|use|unuse|restore|"
	"list|avail|spider|show|help) ;;\n"
	"\t*) set -- load \"$@\" ;;\n"
	"\tesac\n"
	"\thb_cmd_module \"$@\"\n"
	"}\n"
	"hb_compress() {\n"
	"\thb_out=\n"
	"\thb_prev=\n"
	"\thb_cnt=0\n"
	"\tfor hb_x in $1 .; do\n"
	"\t\tif [ \"$hb_x\" = \"$hb_prev\" ]; then\n"
	"\t\t\thb_cnt=$((hb_cnt + 1))\n"
	"\t\t\tcontinue\n"
	"\t\tfi\n"
	"\t\tif [ \"$hb_cnt\" -gt 1 ]; then\n"
	"\t\t\thb_out=${hb_out:+$hb_out,}$hb_prev\"(x$hb_cnt)\"\n"
	"\t\telif [ \"$hb_cnt\" -eq 1 ]; then\n"
	"\t\t\thb_out=${hb_out:+$hb_out,}$hb_prev\n"
	"\t\tfi\n"
	"\t\thb_prev=$hb_x\n"
	"\t\thb_cnt=1\n"
	"\tdone\n"
	"}\n"
	"hb_srun_takes() {\n"
	"\tcase $1 in\n"
	"\t--ntasks|--nodes|--ntasks-per-node|--cpus-per-task|--nodelist|\\\n"
	"\t--exclude|--chdir|--mpi|--export|--job-name|--cpu-bind|--mem-bind|\\"
	"\n"
	"\t--mem|--mem-per-cpu|--mem-per-gpu|--gres|--gpus|--gpus-per-node|\\\n"
	"\t--gpus-per-task|--gpu-bind|--time|--time-min|--wait|--open-mode|\\\n"
	"\t--output|--error|--input|--partition|--account|--qos|--hint|\\\n"
	"\t--comment|--cpu-freq|--network|--threads-per-core|--threads|\\\n"
	"\t--extra-node-info|--distribution|--ntasks-per-core|\\\n"
	"\t--ntasks-per-socket|--ntasks-per-gpu|--sockets-per-node|\\\n"
	"\t--cores-per-socket|--mincpus|--constraint|--reservation|\\\n"
	"\t--het-group|--tres-per-task|--cpus-per-gpu|--gpus-per-socket|\\\n"
	"\t--acctg-freq|--prolog|--epilog|--task-prolog|--task-epilog|\\\n"
	"\t--slurmd-debug|--wckey|--dependency|--signal|--bcast|--compress|\\\n"
	"\t--container|--jobid|--licenses|--clusters|--nodefile|--core-spec|\\"
	"\n"
	"\t--thread-spec|--gres-flags|--mcs-label|--power|--switches|--tmp|\\\n"
	"\t--delay-boot|--uid|--gid|--begin|--deadline|--mail-type|\\\n"
	"\t--mail-user|--profile|--gpu-freq|--cluster-constraint)\n"
	"\t\treturn 0 ;;\n"
	"\tesac\n"
	"\treturn 1\n"
	"}\n"
	"hb_srun_flag() {\n"
	"\tcase $1 in\n"
	"\t--label|--unbuffered|--verbose|--quiet|--exclusive|--overlap|\\\n"
	"\t--oversubscribe|--exact|--whole|--pty|--disable-status|--no-kill|\\"
	"\n"
	"\t--preserve-env|--propagate|--no-allocate|--overcommit|--hold|\\\n"
	"\t--help|--usage|--version|--test-only|--kill-on-bad-exit|\\\n"
	"\t--multi-prog|--spread-job|--use-min-nodes|--contiguous|\\\n"
	"\t--quit-on-interrupt|--immediate|--nice|--send-libs|--resv-ports|\\\n"
	"\t--x11|--reboot|--requeue|--no-requeue)\n"
	"\t\treturn 0 ;;\n"
	"\tesac\n"
	"\treturn 1\n"
	"}\n"
	"hb_srun_opt() {\n"
	"\tcase $1 in\n"
	"\t-n|--ntasks) hb_n=$2 ;;\n"
	"\t-N|--nodes) hb_nn=${2%%-*} ;;\n"
	"\t--ntasks-per-node) hb_ntpn=$2 ;;\n"
	"\t-c|--cpus-per-task) hb_c=$2 ;;\n"
	"\t-w|--nodelist) hb_sw=$2 ;;\n"
	"\t-x|--exclude) hb_sx=$2 ;;\n"
	"\t-D|--chdir) hb_sd=$2 ;;\n"
	"\t--multi-prog)\n"
	"\t\thb_note \"srun: --multi-prog is not supported here\"\n"
	"\t\texit 1 ;;\n"
	"\t*)\n"
	"\t\tif [ \"$3\" = 1 ]; then\n"
	"\t\t\thb_once \"srun $1\" \"srun: $1 has no effect here\"\n"
	"\t\telse\n"
	"\t\t\thb_once \"srun $1\" \"srun: unknown option $1 ignored\"\n"
	"\t\tfi ;;\n"
	"\tesac\n"
	"}\n"
	"hb_cmd_srun() {\n"
	"\thb_n= hb_nn= hb_ntpn= hb_c= hb_sw= hb_sx= hb_sd=\n"
	"\twhile [ $# -gt 0 ]; do\n"
	"\t\thb_o=$1\n"
	"\t\tcase $hb_o in\n"
	"\t\t--) shift; break ;;\n"
	"\t\t--*=*)\n"
	"\t\t\thb_k=1\n"
	"\t\t\thb_srun_takes \"${hb_o%%=*}\" ||\n"
	"\t\t\t    hb_srun_flag \"${hb_o%%=*}\" || hb_k=0\n"
	"\t\t\thb_srun_opt \"${hb_o%%=*}\" \"${hb_o#*=}\" \"$hb_k\"\n"
	"\t\t\tshift; continue ;;\n"
	"\t\t--?*)\n"
	"\t\t\tif hb_srun_takes \"$hb_o\"; then\n"
	"\t\t\t\tif [ $# -lt 2 ]; then\n"
	"\t\t\t\t\thb_note \"srun: $hb_o needs a value\"\n"
	"\t\t\t\t\texit 1\n"
	"\t\t\t\tfi\n"
	"\t\t\t\thb_srun_opt \"$hb_o\" \"$2\" 1\n"
	"\t\t\t\tshift 2; continue\n"
	"\t\t\tfi\n"
	"\t\t\thb_k=1\n"
	"\t\t\thb_srun_flag \"$hb_o\" || hb_k=0\n"
	"\t\t\thb_srun_opt \"$hb_o\" \"\" \"$hb_k\"\n"
	"\t\t\tshift; continue ;;\n"
	"\t\t-?*) ;;\n"
	"\t\t*) break ;;\n"
	"\t\tesac\n"
	"\t\thb_l=${hb_o#-}\n"
	"\t\thb_r=${hb_l#?}\n"
	"\t\thb_l=${hb_l%\"$hb_r\"}\n"
	"\t\tshift\n"
	"\t\tcase $hb_l in\n"
	"\t\t[AbBCcdDeFGiJLmMnNopqStTwWx])\n"
	"\t\t\tif [ -z \"$hb_r\" ]; then\n"
	"\t\t\t\tif [ $# -lt 1 ]; then\n"
	"\t\t\t\t\thb_note \"srun: -$hb_l needs a value\"\n"
	"\t\t\t\t\texit 1\n"
	"\t\t\t\tfi\n"
	"\t\t\t\thb_r=$1\n"
	"\t\t\t\tshift\n"
	"\t\t\tfi\n"
	"\t\t\thb_srun_opt \"-$hb_l\" \"$hb_r\" 1 ;;\n"
	"\t\t[IkK])\n"
	"\t\t\thb_srun_opt \"-$hb_l\" \"$hb_r\" 1 ;;\n"
	"\t\t[EHhlOQsuvVXZ])\n"
	"\t\t\thb_srun_opt \"-$hb_l\" \"\" 1\n"
	"\t\t\t[ -z \"$hb_r\" ] || set -- \"-$hb_r\" \"$@\" ;;\n"
	"\t\t*)\n"
	"\t\t\thb_srun_opt \"-$hb_l\" \"\" 0 ;;\n"
	"\t\tesac\n"
	"\tdone\n"
	"\tif [ $# -eq 0 ]; then\n"
	"\t\thb_note \"srun: no program given\"\n"
	"\t\texit 1\n"
	"\tfi\n"
	"\tfor hb_x in \"$hb_n\" \"$hb_nn\" \"$hb_ntpn\" \"$hb_c\"; do\n"
	"\t\tcase $hb_x in\n"
	"\t\t*[!0-9]*|0*|???????*)\n"
	"\t\t\thb_note \"srun: bad count '$hb_x'\"\n"
	"\t\t\texit 1 ;;\n"
	"\t\tesac\n"
	"\tdone\n"
	"\t# The step's hosts: the job's, or -w's, minus -x's, first -N.\n"
	"\thb_sel=$hb_dir/step.$$\n"
	"\t: >\"$hb_sel\" || exit 1\n"
	"\tif [ -n \"$hb_sw\" ]; then\n"
	"\t\tfor hb_h in $(hb_expand \"$hb_sw\"); do\n"
	"\t\t\thb_t=\n"
	"\t\t\twhile read -r hb_a hb_b hb_c2; do\n"
	"\t\t\t\t[ \"$hb_a\" = \"$hb_h\" ] && hb_t=$hb_c2 && break\n"
	"\t\t\tdone <\"$hb_dir/hosts\"\n"
	"\t\t\tif [ -z \"$hb_t\" ]; then\n"
	"\t\t\t\thb_note \"srun: host $hb_h is not in this job\"\n"
	"\t\t\t\texit 1\n"
	"\t\t\tfi\n"
	"\t\t\tprintf '%s %s\\n' \"$hb_h\" \"$hb_t\" >>\"$hb_sel\"\n"
	"\t\tdone\n"
	"\telse\n"
	"\t\twhile read -r hb_a hb_b hb_c2; do\n"
	"\t\t\tprintf '%s %s\\n' \"$hb_a\" \"$hb_c2\" >>\"$hb_sel\"\n"
	"\t\tdone <\"$hb_dir/hosts\"\n"
	"\tfi\n"
	"\thb_xl=' '\n"
	"\tfor hb_x in $(hb_expand \"$hb_sx\"); do\n"
	"\t\thb_xl=\"$hb_xl$hb_x \"\n"
	"\tdone\n"
	"\thb_k=0 hb_sum=0 hb_list= hb_tl= hb_hl=\n"
	"\tif [ -n \"$hb_n\" ] && [ -n \"$hb_nn\" ] && [ -z \"$hb_ntpn\" ]; "
	"then\n"
	"\t\thb_ntpn=$(((hb_n + hb_nn - 1) / hb_nn))\n"
	"\tfi\n"
	"\twhile read -r hb_h hb_t; do\n"
	"\t\tcase $hb_xl in *\" $hb_h \"*) continue ;; esac\n"
	"\t\t[ -z \"$hb_nn\" ] || [ \"$hb_k\" -lt \"$hb_nn\" ] || break\n"
	"\t\t[ -z \"$hb_ntpn\" ] || hb_t=$hb_ntpn\n"
	"\t\t[ \"$hb_t\" -gt 0 ] || [ -n \"$hb_nn\" ] || continue\n"
	"\t\t[ \"$hb_t\" -gt 0 ] || hb_t=1\n"
	"\t\thb_k=$((hb_k + 1))\n"
	"\t\thb_sum=$((hb_sum + hb_t))\n"
	"\t\thb_list=${hb_list:+$hb_list,}$hb_h\n"
	"\t\thb_tl=\"$hb_tl $hb_t\"\n"
	"\t\thb_hl=\"$hb_hl$hb_h $hb_t\n"
	"\"\n"
	"\tdone <\"$hb_sel\"\n"
	"\tif [ \"$hb_k\" -eq 0 ] || { [ -n \"$hb_nn\" ] && [ \"$hb_k\" -lt "
	"\"$hb_nn\" ]; }; then\n"
	"\t\thb_note \"srun: this job has too few nodes for the request\"\n"
	"\t\texit 1\n"
	"\tfi\n"
	"\tif [ -z \"$hb_n\" ]; then\n"
	"\t\thb_n=$hb_sum\n"
	"\t\tif [ -z \"$hb_nn$hb_ntpn$hb_sw$hb_sx\" ]; then\n"
	"\t\t\tcase ${SLURM_NTASKS-} in\n"
	"\t\t\t''|*[!0-9]*|0*|???????*) ;;\n"
	"\t\t\t*) hb_n=$SLURM_NTASKS ;;\n"
	"\t\t\tesac\n"
	"\t\tfi\n"
	"\tfi\n"
	"\thb_compress \"$hb_tl\"\n"
	"\thb_step=0\n"
	"\t[ ! -f \"$hb_dir/steps\" ] || read -r hb_step <\"$hb_dir/steps\"\n"
	"\tcase $hb_step in ''|*[!0-9]*|?????????*) hb_step=0 ;; esac\n"
	"\techo $((hb_step + 1)) >\"$hb_dir/steps\"\n"
	"\t# Per-task variables: the job's SLURM_* and the step's.\n"
	"\tset -- -- \"$@\"\n"
	"\t[ -z \"$hb_c\" ] || set -- \"SLURM_CPUS_PER_TASK=$hb_c\" \"$@\"\n"
	"\tset -- \"SLURM_NTASKS=$hb_n\" \"SLURM_NPROCS=$hb_n\" \\\n"
	"\t    \"SLURM_STEP_NUM_TASKS=$hb_n\" \"SLURM_NNODES=$hb_k\" \\\n"
	"\t    \"SLURM_STEP_NUM_NODES=$hb_k\" \"SLURM_NODELIST=$hb_list\" \\\n"
	"\t    \"SLURM_STEP_NODELIST=$hb_list\" "
	"\"SLURM_TASKS_PER_NODE=$hb_out\" \\\n"
	"\t    \"SLURM_STEP_TASKS_PER_NODE=$hb_out\" "
	"\"SLURM_STEP_ID=$hb_step\" \\\n"
	"\t    \"SLURM_STEPID=$hb_step\" \"$@\"\n"
	"\tfor hb_x in $(hb_env_names); do\n"
	"\t\tcase $hb_x in\n"
	"\t\tSLURM*) eval \"set -- \\\"\\$hb_x=\\${$hb_x}\\\" \\\"\\$@\\\"\" "
	";;\n"
	"\t\tesac\n"
	"\tdone\n"
	"\tset -- /bin/sh -c \"$hb_task\" hpcbridge-task \"$@\"\n"
	"\t[ -z \"$hb_sd\" ] || cd \"$hb_sd\" || exit 1\n"
	"\tif ! { hb_find_real mpirun || hb_find_real mpiexec; }; then\n"
	"\t\tif [ \"$hb_n\" -eq 1 ]; then\n"
	"\t\t\texec \"$@\"\n"
	"\t\tfi\n"
	"\t\thb_note \"srun: no mpirun or mpiexec on PATH to start $hb_n "
	"tasks\"\n"
	"\t\texit 127\n"
	"\tfi\n"
	"\thb_flavor \"$hb_real\"\n"
	"\tif [ \"$hb_fl\" = ompi ]; then\n"
	"\t\tprintf '%s' \"$hb_hl\" | while read -r hb_h hb_t; do\n"
	"\t\t\tprintf '%s slots=%s\\n' \"$hb_h\" \"$hb_t\"\n"
	"\t\tdone >\"$hb_sel\"\n"
	"\t\t[ -z \"$hb_c\" ] || set -- --map-by \"slot:PE=$hb_c\" \"$@\"\n"
	"\t\tset -- --hostfile \"$hb_sel\" -np \"$hb_n\" \"$@\"\n"
	"\telse\n"
	"\t\tprintf '%s' \"$hb_hl\" | while read -r hb_h hb_t; do\n"
	"\t\t\tprintf '%s:%s\\n' \"$hb_h\" \"$hb_t\"\n"
	"\t\tdone >\"$hb_sel\"\n"
	"\t\tif [ -n \"$hb_c\" ]; then\n"
	"\t\t\tif [ \"$hb_fl\" = intel ]; then\n"
	"\t\t\t\tI_MPI_PIN_DOMAIN=$hb_c\n"
	"\t\t\t\texport I_MPI_PIN_DOMAIN\n"
	"\t\t\telse\n"
	"\t\t\t\tset -- -bind-to \"core:$hb_c\" \"$@\"\n"
	"\t\t\tfi\n"
	"\t\tfi\n"
	"\t\tset -- -f \"$hb_sel\" -n \"$hb_n\" \"$@\"\n"
	"\tfi\n"
	"\thb_launch \"$@\"\n"
	"}\n"
	"hb_task='while [ \"$#\" -gt 0 ]; do\n"
	"if [ \"$1\" = -- ]; then shift; break; fi\n"
	"export \"$1\"; shift\n"
	"done\n"
	"SLURM_PROCID=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-0}}}\n"
	"SLURM_LOCALID=${OMPI_COMM_WORLD_LOCAL_RANK:-${MPI_LOCALRANKID:-0}}\n"
	"SLURMD_NODENAME=$(uname -n 2>/dev/null)\n"
	"SLURM_NODEID=0\n"
	"hb_i=0\n"
	"IFS=,\n"
	"set -f\n"
	"for hb_h in $SLURM_STEP_NODELIST; do\n"
	"case $hb_h in \"$SLURMD_NODENAME\"|\"$SLURMD_NODENAME\".*) "
	"SLURM_NODEID=$hb_i; break;; esac\n"
	"hb_i=$((hb_i + 1))\n"
	"done\n"
	"unset IFS hb_i hb_h\n"
	"set +f\n"
	"export SLURM_PROCID SLURM_LOCALID SLURMD_NODENAME SLURM_NODEID\n"
	"SLURM_TASK_PID=$$\n"
	"export SLURM_TASK_PID\n"
	"exec \"$@\"'\n"
	"hb_hostline() {\n"
	"\thb_x=${1%\"$hb_cr\"}\n"
	"\thb_x=${hb_x%%#*}\n"
	"\tset -f\n"
	"\tset -- $hb_x\n"
	"\tset +f\n"
	"\t[ $# -gt 0 ] || return 0\n"
	"\thb_h=$1\n"
	"\thb_s=1\n"
	"\tshift\n"
	"\tcase $hb_h in\n"
	"\t*:*:*) ;;\n"
	"\t*:*)\n"
	"\t\tcase ${hb_h##*:} in\n"
	"\t\t''|*[!0-9]*) ;;\n"
	"\t\t*) hb_s=${hb_h##*:}; hb_h=${hb_h%:*} ;;\n"
	"\t\tesac ;;\n"
	"\tesac\n"
	"\tfor hb_x do\n"
	"\t\tcase $hb_x in slots=*) hb_s=${hb_x#slots=} ;; esac\n"
	"\tdone\n"
	"\tcase $hb_s in\n"
	"\t''|*[!0-9]*|??????*)\n"
	"\t\thb_note \"$hb_hostfile: bad slot count '$hb_s' for $hb_h: using "
	"1\"\n"
	"\t\thb_s=1 ;;\n"
	"\tesac\n"
	"\thb_s=${hb_s#\"${hb_s%%[!0]*}\"}\n"
	"\t[ -n \"$hb_s\" ] && [ -n \"$hb_h\" ] || return 0\n"
	"\tprintf '%s %s\\n' \"$hb_h\" \"$hb_s\"\n"
	"}\n"
	"hb_setup() {\n"
	"\thb_hostfile=${HPCBRIDGE_HOSTFILE:-/etc/mpi/hostfile}\n"
	"\thb_cr=$(printf '\\r')\n"
	"\thb_host=$(uname -n 2>/dev/null) || hb_host=localhost\n"
	"\tif [ -r \"$hb_hostfile\" ]; then\n"
	"\t\twhile IFS= read -r hb_l || [ -n \"$hb_l\" ]; do\n"
	"\t\t\thb_hostline \"$hb_l\"\n"
	"\t\tdone <\"$hb_hostfile\" >\"$hb_dir/hosts.raw\"\n"
	"\telse\n"
	"\t\t: >\"$hb_dir/hosts.raw\"\n"
	"\tfi || hb_fail \"cannot write in $hb_dir\"\n"
	"\tif [ ! -s \"$hb_dir/hosts.raw\" ]; then\n"
	"\t\thb_note \"no hosts in $hb_hostfile: running every task on this "
	"host\"\n"
	"\t\tprintf '%s %s\\n' \"$hb_host\" \"$hb_fallback\" "
	">\"$hb_dir/hosts.raw\"\n"
	"\tfi\n"
	"\thb_nodes=0\n"
	"\thb_slots=0\n"
	"\twhile read -r hb_h hb_s; do\n"
	"\t\thb_nodes=$((hb_nodes + 1))\n"
	"\t\thb_slots=$((hb_slots + hb_s))\n"
	"\tdone <\"$hb_dir/hosts.raw\"\n"
	"\thb_ntasks=$hb_slots\n"
	"\tif [ \"$hb_ntasks_req\" -gt \"$hb_slots\" ]; then\n"
	"\t\thb_note \"the job asks for $hb_ntasks_req tasks but $hb_hostfile "
	"has $hb_slots slots: running $hb_slots\"\n"
	"\telif [ \"$hb_ntasks_req\" -gt 0 ]; then\n"
	"\t\thb_ntasks=$hb_ntasks_req\n"
	"\tfi\n"
	"\t# Slurm's block distribution: a task on each node, then fill nodes\n"
	"\t# up to their slots in order.\n"
	"\thb_left=$hb_ntasks\n"
	"\twhile read -r hb_h hb_s; do\n"
	"\t\thb_t=0\n"
	"\t\tif [ \"$hb_left\" -gt 0 ]; then\n"
	"\t\t\thb_t=1\n"
	"\t\t\thb_left=$((hb_left - 1))\n"
	"\t\tfi\n"
	"\t\tprintf '%s %s %s\\n' \"$hb_h\" \"$hb_s\" \"$hb_t\"\n"
	"\tdone <\"$hb_dir/hosts.raw\" >\"$hb_dir/hosts.one\" || hb_fail "
	"\"cannot write in $hb_dir\"\n"
	"\thb_cpt1=$hb_cpt\n"
	"\t[ \"$hb_cpt1\" -gt 0 ] || hb_cpt1=1\n"
	"\thb_list= hb_tl= hb_cl= hb_ppn= hb_uni=\n"
	"\texec 3>\"$hb_dir/hosts\" 4>\"$hb_dir/hostfile\" "
	"5>\"$hb_dir/hostfile.hydra\" \\\n"
	"\t    6>\"$hb_dir/nodefile\" || hb_fail \"cannot write in $hb_dir\"\n"
	"\twhile read -r hb_h hb_s hb_t; do\n"
	"\t\thb_a=$((hb_s - hb_t))\n"
	"\t\t[ \"$hb_a\" -le \"$hb_left\" ] || hb_a=$hb_left\n"
	"\t\thb_t=$((hb_t + hb_a))\n"
	"\t\thb_left=$((hb_left - hb_a))\n"
	"\t\tprintf '%s %s %s\\n' \"$hb_h\" \"$hb_s\" \"$hb_t\" >&3\n"
	"\t\tif [ \"$hb_t\" -gt 0 ]; then\n"
	"\t\t\tprintf '%s slots=%s\\n' \"$hb_h\" \"$hb_t\" >&4\n"
	"\t\t\tprintf '%s:%s\\n' \"$hb_h\" \"$hb_t\" >&5\n"
	"\t\t\thb_i=0\n"
	"\t\t\twhile [ \"$hb_i\" -lt \"$hb_t\" ]; do\n"
	"\t\t\t\tprintf '%s\\n' \"$hb_h\" >&6\n"
	"\t\t\t\thb_i=$((hb_i + 1))\n"
	"\t\t\tdone\n"
	"\t\tfi\n"
	"\t\tif [ -z \"$hb_ppn\" ]; then\n"
	"\t\t\thb_ppn=$hb_t\n"
	"\t\t\thb_uni=$hb_t\n"
	"\t\t\tSLURM_CPUS_ON_NODE=$((hb_s * hb_cpt1))\n"
	"\t\tfi\n"
	"\t\t[ \"$hb_t\" = \"$hb_uni\" ] || hb_uni=\n"
	"\t\thb_list=${hb_list:+$hb_list,}$hb_h\n"
	"\t\thb_tl=\"$hb_tl $hb_t\"\n"
	"\t\thb_cl=\"$hb_cl $((hb_s * hb_cpt1))\"\n"
	"\tdone <\"$hb_dir/hosts.one\"\n"
	"\texec 3>&- 4>&- 5>&- 6>&-\n"
	"\t[ \"$hb_ntpn\" -eq 0 ] || hb_ppn=$hb_ntpn hb_uni=$hb_ntpn\n"
	"\thb_compress \"$hb_tl\"\n"
	"\tSLURM_TASKS_PER_NODE=$hb_out\n"
	"\thb_compress \"$hb_cl\"\n"
	"\tSLURM_JOB_CPUS_PER_NODE=$hb_out\n"
	"\tSLURM_NTASKS=$hb_ntasks\n"
	"\tSLURM_NPROCS=$hb_ntasks\n"
	"\tSLURM_JOB_NUM_NODES=$hb_nodes\n"
	"\tSLURM_NNODES=$hb_nodes\n"
	"\tSLURM_JOB_NODELIST=$hb_list\n"
	"\tSLURM_NODELIST=$hb_list\n"
	"\tSLURM_SUBMIT_DIR=$hb_workdir\n"
	"\tSLURM_SUBMIT_HOST=${HPCBRIDGE_SUBMIT_HOST:-$hb_host}\n"
	"\tSLURMD_NODENAME=$hb_host\n"
	"\tSLURM_NODEID=0\n"
	"\tSLURM_PROCID=0\n"
	"\tSLURM_LOCALID=0\n"
	"\tSLURM_TASK_PID=$$\n"
	"\tENVIRONMENT=BATCH\n"
	"\texport SLURM_TASKS_PER_NODE SLURM_JOB_CPUS_PER_NODE "
	"SLURM_CPUS_ON_NODE \\\n"
	"\t    SLURM_NTASKS SLURM_NPROCS SLURM_JOB_NUM_NODES SLURM_NNODES \\\n"
	"\t    SLURM_JOB_NODELIST SLURM_NODELIST SLURM_SUBMIT_DIR \\\n"
	"\t    SLURM_SUBMIT_HOST SLURMD_NODENAME SLURM_NODEID SLURM_PROCID \\\n"
	"\t    SLURM_LOCALID SLURM_TASK_PID ENVIRONMENT\n"
	"\tif [ -n \"$hb_uni\" ]; then\n"
	"\t\tSLURM_NTASKS_PER_NODE=$hb_uni\n"
	"\t\texport SLURM_NTASKS_PER_NODE\n"
	"\tfi\n"
	"\tPBS_NODEFILE=$hb_dir/nodefile\n"
	"\tPBS_NUM_NODES=$hb_nodes\n"
	"\tPBS_NUM_PPN=$hb_ppn\n"
	"\tPBS_NP=$hb_ntasks\n"
	"\tPBS_O_WORKDIR=$hb_workdir\n"
	"\tPBS_O_HOST=$SLURM_SUBMIT_HOST\n"
	"\tPBS_O_PATH=${PATH-}\n"
	"\tPBS_O_HOME=${HOME-}\n"
	"\tPBS_ENVIRONMENT=PBS_BATCH\n"
	"\tPBS_TASKNUM=1\n"
	"\tPBS_NODENUM=0\n"
	"\tPBS_VNODENUM=0\n"
	"\texport PBS_NODEFILE PBS_NUM_NODES PBS_NUM_PPN PBS_NP PBS_O_WORKDIR "
	"\\\n"
	"\t    PBS_O_HOST PBS_O_PATH PBS_O_HOME PBS_ENVIRONMENT PBS_TASKNUM "
	"\\\n"
	"\t    PBS_NODENUM PBS_VNODENUM\n"
	"\t# An mpirun called by absolute path still sees the variables "
	"above:\n"
	"\t# keep it from launching through Slurm or PBS.\n"
	"\t: \"${OMPI_MCA_plm:=^slurm,tm}\" \"${PRTE_MCA_plm:=^slurm,tm}\"\n"
	"\t: \"${HYDRA_BOOTSTRAP:=ssh}\" \"${I_MPI_HYDRA_BOOTSTRAP:=ssh}\"\n"
	"\texport OMPI_MCA_plm PRTE_MCA_plm HYDRA_BOOTSTRAP "
	"I_MPI_HYDRA_BOOTSTRAP\n"
	"\t# The workers' sshd runs as the user on an unprivileged port: "
	"each MPI's\n"
	"\t# ssh gets the port and key after what the operator set.\n"
	"\tif [ -n \"${HPCBRIDGE_SSH_ARGS-}\" ]; then\n"
	"\t\t# ssh needs a name for its uid: the one the workers' sshd "
	"gives it.\n"
	"\t\tif ! id -un >/dev/null 2>&1 && [ -w /etc/passwd ]; then\n"
	"\t\t\techo \"hpcbridge:x:$(id -u):$(id -g)::${TMPDIR:-/tmp}:"
	"/bin/sh\" \\\n"
	"\t\t\t    >>/etc/passwd\n"
	"\t\tfi\n"
	"\t\tOMPI_MCA_plm_rsh_args=\"${OMPI_MCA_plm_rsh_args:+"
	"$OMPI_MCA_plm_rsh_args }$HPCBRIDGE_SSH_ARGS\"\n"
	"\t\tI_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS=\""
	"${I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS:+"
	"$I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS }$HPCBRIDGE_SSH_ARGS\"\n"
	"\t\tHYDRA_LAUNCHER_EXTRA_ARGS=\"${HYDRA_LAUNCHER_EXTRA_ARGS:+"
	"$HYDRA_LAUNCHER_EXTRA_ARGS }$HPCBRIDGE_SSH_ARGS\"\n"
	"\t\texport OMPI_MCA_plm_rsh_args "
	"I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS \\\n"
	"\t\t    HYDRA_LAUNCHER_EXTRA_ARGS\n"
	"\tfi\n"
	"\t# Open MPI 5 reads PRTE_MCA_*, not the OMPI_MCA_orte_* the operator "
	"sets.\n"
	"\tif [ -n \"${OMPI_MCA_plm_rsh_args-}\" ] && [ -z "
	"\"${PRTE_MCA_plm_rsh_args+x}\" ]; then\n"
	"\t\tPRTE_MCA_plm_rsh_args=$OMPI_MCA_plm_rsh_args\n"
	"\t\texport PRTE_MCA_plm_rsh_args\n"
	"\tfi\n"
	"\tPATH=$hb_dir/bin:${PATH:-/usr/bin:/bin}\n"
	"\texport PATH\n"
	"}\n"
	"hb_run() {\n"
	"\tif [ \"$1\" = 1 ]; then\n"
	"\t\thb_x=$(cat \"$hb_script\" && printf x) || hb_fail \"cannot read "
	"$hb_script\"\n"
	"\t\thb_x=${hb_x%x}\n"
	"\t\tprintf '%s' \"${hb_x%?}\" >\"$hb_script\" || hb_fail \"cannot "
	"write $hb_script\"\n"
	"\t\tunset hb_x\n"
	"\tfi\n"
	"\tchmod 755 \"$hb_script\" || hb_fail \"cannot make $hb_script "
	"executable\"\n"
	"\thb_x=$hb_workdir\n"
	"\tif ! cd \"$hb_x\" || { [ -n \"${hb_chdir+x}\" ] && hb_x=$hb_chdir "
	"&&\n"
	"\t    ! cd \"$hb_x\"; }; then\n"
	"\t\thb_note \"cannot chdir to $hb_x: running in /tmp\"\n"
	"\t\tcd /tmp || hb_fail \"cannot chdir to /tmp\"\n"
	"\tfi\n"
	"\tif [ -n \"${HPCBRIDGE_CKPT_URL:-}\" ] &&\n"
	"\t    [ -n \"${HPCBRIDGE_CKPT_DIR:-}\" ]; then\n"
	"\t\thb_run_ckpt\n"
	"\tfi\n"
	"\tif [ -n \"${hb_interp_arg+x}\" ]; then\n"
	"\t\texec \"$hb_interp\" \"$hb_interp_arg\" \"$hb_script\"\n"
	"\tfi\n"
	"\texec \"$hb_interp\" \"$hb_script\"\n"
	"}\n"
	/* The job's checkpoint goes back to S3 when the script ends, or is
	 * stopped (SIGTERM: preempted, cancelled), for the gateway to bring
	 * it back to the shared filesystem.  The script runs as a child
	 * then, the signal passed on to it. */
	/* The gateway's S3 settings reach the push alone: the job's own
	 * AWS_* stay as the job set them. */
	"hb_ckpt_push() (\n"
	"\t[ -z \"${HPCBRIDGE_S3_ENDPOINT:-}\" ] ||\n"
	"\t    export AWS_ENDPOINT_URL=\"$HPCBRIDGE_S3_ENDPOINT\"\n"
	"\t[ -z \"${HPCBRIDGE_S3_REGION:-}\" ] ||\n"
	"\t    export AWS_DEFAULT_REGION=\"$HPCBRIDGE_S3_REGION\"\n"
	"\tif [ -n \"${HPCBRIDGE_S3_ACCESS_KEY_ID:-}\" ]; then\n"
	"\t\texport AWS_ACCESS_KEY_ID=\"$HPCBRIDGE_S3_ACCESS_KEY_ID\"\n"
	"\t\texport AWS_SECRET_ACCESS_KEY=\"${HPCBRIDGE_S3_SECRET_ACCESS_KEY:-}\"\n"
	"\t\tunset AWS_SESSION_TOKEN AWS_PROFILE\n"
	"\tfi\n"
	"\thpcbridge ckpt push \"$HPCBRIDGE_CKPT_DIR\" \"$HPCBRIDGE_CKPT_URL\" "
	"\\\n"
	"\t    --job \"${HPCBRIDGE_JOB_ID:-${SLURM_JOB_ID:--}}\" "
	"--progress none >&2\n"
	")\n"
	"hb_run_ckpt() {\n"
	"\tif [ -n \"${hb_interp_arg+x}\" ]; then\n"
	"\t\t\"$hb_interp\" \"$hb_interp_arg\" \"$hb_script\" <&0 &\n"
	"\telse\n"
	"\t\t\"$hb_interp\" \"$hb_script\" <&0 &\n"
	"\tfi\n"
	"\thb_pid=$!\n"
	"\thb_loop=\n"
	"\tcase ${HPCBRIDGE_CKPT_EVERY:-0} in\n"
	"\t'' | 0 | *[!0-9]*) ;;\n"
	"\t*)\n"
	"\t\twhile sleep \"$HPCBRIDGE_CKPT_EVERY\"; do\n"
	"\t\t\t[ ! -d \"$HPCBRIDGE_CKPT_DIR\" ] || hb_ckpt_push ||\n"
	"\t\t\t    hb_note \"the checkpoint was not pushed this time\"\n"
	"\t\tdone </dev/null &\n"
	"\t\thb_loop=$!\n"
	"\t\t;;\n"
	"\tesac\n"
	"\ttrap 'kill -TERM \"$hb_pid\" 2>/dev/null' TERM INT\n"
	"\twhile :; do\n"
	"\t\twait \"$hb_pid\"\n"
	"\t\thb_st=$?\n"
	"\t\tkill -0 \"$hb_pid\" 2>/dev/null || break\n"
	"\tdone\n"
	"\ttrap - TERM INT\n"
	"\tif [ -n \"$hb_loop\" ]; then\n"
	"\t\tkill \"$hb_loop\" 2>/dev/null\n"
	"\t\twait \"$hb_loop\" 2>/dev/null\n"
	"\tfi\n"
	"\tif [ -d \"$HPCBRIDGE_CKPT_DIR\" ] && ! hb_ckpt_push; then\n"
	"\t\thb_note \"the checkpoint in $HPCBRIDGE_CKPT_DIR was not "
	"pushed to $HPCBRIDGE_CKPT_URL\"\n"
	"\tfi\n"
	"\texit \"$hb_st\"\n"
	"}\n"
	"hb_install() {\n"
	"\tmkdir \"$hb_dir/bin\" || hb_fail \"cannot create $hb_dir/bin\"\n"
	"\tfor hb_x in mpirun mpiexec srun scontrol module ml; do\n"
	"\t\tprintf '#!/bin/sh\\nhb_dir=${0%%/*/*}\\n. "
	"\"$hb_dir/lib.sh\"\\nhb_cmd_%s \"$@\"\\n' \\\n"
	"\t\t    \"$hb_x\" >\"$hb_dir/bin/$hb_x\" &&\n"
	"\t\t    chmod 755 \"$hb_dir/bin/$hb_x\" ||\n"
	"\t\t    hb_fail \"cannot write $hb_dir/bin/$hb_x\"\n"
	"\tdone\n"
	"}\n";
/* clang-format on */

/* Start of the launcher, up to the runtime's contents. */
/* clang-format off */
static const char HEAD[] =
	MAGIC
	"# Runs one job script unchanged in the MPIJob launcher pod.\n"
	"hb_dir=$(mktemp -d \"${TMPDIR:-/tmp}/hpcbridge.XXXXXX\") || {\n"
	"\techo 'hpcbridge: cannot create a private directory' >&2\n"
	"\texit 1\n"
	"}\n"
	"case $hb_dir in /*) ;; *) hb_dir=$(pwd)/$hb_dir ;; esac\n"
	"hb_workdir=${HPCBRIDGE_SUBMIT_DIR:-$(pwd)}\n"
	"cat >\"$hb_dir/lib.sh\" <<'HPCBRIDGE_LIB' || exit 1\n";

static const char END_LIB[] = "HPCBRIDGE_LIB\n";

/* Mounted runtime: appended to the settings written above. */
#define RUNTIME_CAT                                                        \
	"cat \"${HPCBRIDGE_RUNTIME:-" HB_LAUNCHER_RUNTIME_DIR "/"           \
	HB_LAUNCHER_RUNTIME_KEY "}\" >>\"$hb_dir/lib.sh\" || {\n"          \
	"\techo 'hpcbridge: cannot read the launcher runtime (is the "      \
	"ConfigMap mounted?)' >&2\n"                                        \
	"\texit 1\n"                                                        \
	"}\n"

static const char SOURCE_LIB[] = ". \"$hb_dir/lib.sh\" || exit 1\n"
				 "hb_install\n";
/* clang-format on */

static bool is_shell_name(const char *s)
{
	if (!s || !(*s == '_' || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= 'a' && *s <= 'z')))
		return false;
	for (s++; *s; s++)
		if (!(*s == '_' || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')))
			return false;
	return true;
}

/* Variables the launcher itself manages: never forwarded by name. */
static bool is_rm_name(const char *s)
{
	return strncmp(s, "SLURM", 5) == 0 || strncmp(s, "PBS_", 4) == 0;
}

/* Append s (n bytes) single-quoted: 'it'\''s'.  Safe for any bytes. */
static int put_quoted(struct hb_buf *b, const char *s, size_t n)
{
	const char *q;
	int rc;

	if ((rc = hb_buf_putc(b, '\'')))
		return rc;
	while ((q = memchr(s, '\'', n))) {
		if ((rc = hb_buf_append(b, s, (size_t)(q - s))) ||
		    (rc = hb_buf_puts(b, "'\\''")))
			return rc;
		n -= (size_t)(q - s) + 1;
		s = q + 1;
	}
	if ((rc = hb_buf_append(b, s, n)))
		return rc;
	return hb_buf_putc(b, '\'');
}

/* NAME='value'; with export when exp.  name is one of ours or checked. */
static int put_assign(struct hb_buf *b, bool exp, const char *name,
		      const char *value)
{
	size_t nl = strlen(name), vl = strlen(value);
	int rc;

	/* The usual value, with no quote in it, in one piece. */
	if (!memchr(value, '\'', vl)) {
		size_t total = (exp ? 7 : 0) + nl + vl + 4;
		char *o;

		if ((rc = hb_buf_reserve(b, total)))
			return rc;
		o = b->data + b->len;
		if (exp) {
			memcpy(o, "export ", 7);
			o += 7;
		}
		hb_copy(o, name, nl);
		o += nl;
		*o++ = '=';
		*o++ = '\'';
		hb_copy(o, value, vl);
		o += vl;
		*o++ = '\'';
		*o++ = '\n';
		b->len += total;
		b->data[b->len] = '\0';
		return 0;
	}
	if ((exp && (rc = hb_buf_puts(b, "export "))) ||
	    (rc = hb_buf_puts(b, name)) || (rc = hb_buf_putc(b, '=')) ||
	    (rc = put_quoted(b, value, strlen(value))))
		return rc;
	return hb_buf_putc(b, '\n');
}

static int put_export_u64(struct hb_buf *b, const char *name, uint64_t v)
{
	int rc;

	if ((rc = hb_buf_puts(b, "export ")) || (rc = hb_buf_puts(b, name)) ||
	    (rc = hb_buf_putc(b, '=')) || (rc = hb_buf_put_u64(b, v)))
		return rc;
	return hb_buf_putc(b, '\n');
}

/* The job's name as Slurm shows it: --job-name, else the script's file
 * name, else "sbatch" ("STDIN" for PBS) for a script read from stdin. */
static const char *job_name(const struct hb_jobspec *spec)
{
	const char *s = spec->source_name, *slash;

	if (spec->name && *spec->name)
		return spec->name;
	if (s && (slash = strrchr(s, '/')))
		s = slash + 1;
	if (!s || !*s || strcmp(s, "-") == 0)
		return spec->source == HB_SRC_PBS ? "STDIN" : "sbatch";
	return s;
}

static const char *default_flavor(uint8_t mpi)
{
	switch (mpi) {
	case HB_MPI_INTEL:
		return "intel";
	case HB_MPI_MPICH:
	case HB_MPI_MVAPICH2:
		return "mpich";
	default:
		return "ompi";
	}
}

/* Runtime settings that go inside the runtime's heredoc, before the
 * runtime itself: fixed words and validated names only. */
static int put_settings(struct hb_buf *b, const struct hb_jobspec *spec)
{
	int rc;
	bool first = true;

	if ((rc = hb_buf_puts(b, "hb_default_flavor=")) ||
	    (rc = hb_buf_puts(b, default_flavor(spec->mpi))) ||
	    (rc = hb_buf_puts(b, "\nhb_fwd_names='")))
		return rc;
	for (uint32_t i = 0; i < spec->nenv; i++) {
		const char *n = spec->env[i].name;

		if (is_rm_name(n))
			continue;
		if ((!first && (rc = hb_buf_putc(b, ' '))) ||
		    (rc = hb_buf_puts(b, n)))
			return rc;
		first = false;
	}
	return hb_buf_puts(b, "'\n");
}

/* The runtime, inline in the heredoc or read from the mounted file. */
static int put_runtime(struct hb_buf *b, bool mounted)
{
	int rc;

	if (mounted) {
		if ((rc = hb_buf_puts(b, END_LIB)))
			return rc;
		return hb_buf_puts(b, RUNTIME_CAT);
	}
	if ((rc = hb_buf_append(b, RUNTIME, sizeof(RUNTIME) - 1)))
		return rc;
	return hb_buf_puts(b, END_LIB);
}


/* Check spec->env: every name must be a shell variable name. */
static int check_env(const struct hb_jobspec *spec, struct hb_err *err)
{
	for (uint32_t i = 0; i < spec->nenv; i++) {
		if (!is_shell_name(spec->env[i].name))
			return hb_err_set(err, HB_EINVAL, spec->source_name, 0,
					  "environment variable name '%.64s' "
					  "cannot be set by a shell",
					  spec->env[i].name ? spec->env[i].name
							    : "");
	}
	return 0;
}

static int put_env(struct hb_buf *b, const struct hb_jobspec *spec)
{
	int rc;

	for (uint32_t i = 0; i < spec->nenv; i++) {
		/* NULL: passed through from the pod's environment. */
		if (!spec->env[i].value)
			continue;
		if ((rc = put_assign(b, true, spec->env[i].name,
				     spec->env[i].value)))
			return rc;
	}
	return 0;
}

/* Is idx one of the array's indices? */
static bool in_array(const struct hb_jobspec *spec, uint64_t idx)
{
	for (uint32_t i = 0; i < spec->narray_ranges; i++) {
		const struct hb_range *r = &spec->array_ranges[i];

		if (r->step && idx >= r->start && idx <= r->end &&
		    (idx - r->start) % r->step == 0)
			return true;
	}
	return false;
}

static int put_array(struct hb_buf *b, const struct hb_jobspec *spec,
		     const char *job_id, uint64_t idx)
{
	uint64_t count = hb_jobspec_array_count(spec);
	uint64_t min = idx, max = idx, step = 1;
	int rc;

	if (count) {
		min = UINT64_MAX;
		max = 0;
		for (uint32_t i = 0; i < spec->narray_ranges; i++) {
			const struct hb_range *r = &spec->array_ranges[i];
			uint64_t span, last;

			if (!r->step || r->end < r->start)
				continue;
			span = (uint64_t)(r->end - r->start);
			last = r->start + span / r->step * r->step;
			if (r->start < min)
				min = r->start;
			if (last > max)
				max = last;
		}
		if (spec->narray_ranges == 1)
			step = spec->array_ranges[0].step;
	} else {
		count = 1;
	}
	if ((rc = put_assign(b, true, "SLURM_ARRAY_JOB_ID", job_id)) ||
	    (rc = put_export_u64(b, "SLURM_ARRAY_TASK_ID", idx)) ||
	    (rc = put_export_u64(b, "SLURM_ARRAY_TASK_MIN", min)) ||
	    (rc = put_export_u64(b, "SLURM_ARRAY_TASK_MAX", max)) ||
	    (rc = put_export_u64(b, "SLURM_ARRAY_TASK_COUNT", count)) ||
	    (rc = put_export_u64(b, "SLURM_ARRAY_TASK_STEP", step)) ||
	    (rc = put_export_u64(b, "PBS_ARRAYID", idx)) ||
	    (rc = put_export_u64(b, "PBS_ARRAY_INDEX", idx)) ||
	    (rc = put_assign(b, true, "PBS_ARRAY_ID", job_id)))
		return rc;
	return 0;
}

static int put_mem_gpus(struct hb_buf *b, const struct hb_jobspec *spec,
			const struct hb_shape *sh)
{
	const char *gname = NULL;
	char gval[96];
	int rc = 0, n;

	switch (spec->mem_kind) {
	case HB_MEM_PER_CPU:
		rc = put_export_u64(b, "SLURM_MEM_PER_CPU", spec->mem_mb);
		break;
	case HB_MEM_PER_GPU:
		rc = put_export_u64(b, "SLURM_MEM_PER_GPU", spec->mem_mb);
		break;
	case HB_MEM_PER_NODE:
	case HB_MEM_JOB:
	case HB_MEM_PER_PROCESS:
		if (sh->mem_per_node_mb)
			rc = put_export_u64(b, "SLURM_MEM_PER_NODE",
					    sh->mem_per_node_mb);
		break;
	}
	if (rc)
		return rc;
	if (sh->gpus_per_node &&
	    (rc = put_export_u64(b, "SLURM_GPUS_ON_NODE", sh->gpus_per_node)))
		return rc;
	switch (spec->gpu_scope) {
	case HB_GPU_PER_JOB:
		gname = "SLURM_GPUS";
		break;
	case HB_GPU_PER_NODE:
		gname = "SLURM_GPUS_PER_NODE";
		break;
	case HB_GPU_PER_TASK:
		gname = "SLURM_GPUS_PER_TASK";
		break;
	}
	if (!gname || !spec->gpus)
		return 0;
	if (spec->gpu_type && *spec->gpu_type)
		n = snprintf(gval, sizeof(gval), "%.64s:%" PRIu32,
			     spec->gpu_type, spec->gpus);
	else
		n = snprintf(gval, sizeof(gval), "%" PRIu32, spec->gpus);
	if (n < 0 || (size_t)n >= sizeof(gval))
		return HB_ERANGE;
	return put_assign(b, true, gname, gval);
}

/* The values that come from the job rather than the hostfile. */
static int put_job(struct hb_buf *b, const struct hb_jobspec *spec,
		   const char *job_id, int64_t array_index,
		   const struct hb_shape *sh)
{
	const char *name = job_name(spec);
	int rc;

	if ((rc = put_assign(b, true, "SLURM_JOB_ID", job_id)) ||
	    (rc = put_assign(b, true, "SLURM_JOBID", job_id)) ||
	    (rc = put_assign(b, true, "SLURM_JOB_NAME", name)) ||
	    (rc = put_assign(b, true, "PBS_JOBID", job_id)) ||
	    (rc = put_assign(b, true, "PBS_JOBNAME", name)))
		return rc;
	if (spec->partition &&
	    ((rc = put_assign(b, true, "SLURM_JOB_PARTITION",
			      spec->partition)) ||
	     (rc = put_assign(b, true, "PBS_QUEUE", spec->partition)) ||
	     (rc = put_assign(b, true, "PBS_O_QUEUE", spec->partition))))
		return rc;
	if (spec->account &&
	    ((rc = put_assign(b, true, "SLURM_JOB_ACCOUNT", spec->account)) ||
	     (rc = put_assign(b, true, "PBS_ACCOUNT", spec->account))))
		return rc;
	if (spec->qos && (rc = put_assign(b, true, "SLURM_JOB_QOS", spec->qos)))
		return rc;
	if (spec->user &&
	    ((rc = put_assign(b, true, "SLURM_JOB_USER", spec->user)) ||
	     (rc = put_assign(b, true, "PBS_O_LOGNAME", spec->user))))
		return rc;
	if (spec->cpus_per_task &&
	    (rc =
		 put_export_u64(b, "SLURM_CPUS_PER_TASK", spec->cpus_per_task)))
		return rc;
	if (spec->time_limit && spec->time_limit != HB_TIME_UNLIMITED &&
	    (rc = put_export_u64(b, "PBS_WALLTIME", spec->time_limit)))
		return rc;
	if ((rc = put_mem_gpus(b, spec, sh)))
		return rc;
	/* A burst job's Slurm side is its proxy: where the daemon passes
	 * the proxy's ids, the job reads the ids squeue shows */
	if ((rc = hb_buf_puts(
		     b, "if [ -n \"${HPCBRIDGE_SLURM_JOB_ID-}\" ]; then\n"
			"\texport SLURM_JOB_ID=\"$HPCBRIDGE_SLURM_JOB_ID\"\n"
			"\texport SLURM_JOBID=\"$HPCBRIDGE_SLURM_JOB_ID\"\n"
			"\texport PBS_JOBID=\"$HPCBRIDGE_SLURM_JOB_ID\"\n"
			"fi\n")))
		return rc;
	if (array_index < 0)
		return 0;
	return put_array(b, spec, job_id, (uint64_t)array_index) ?:
	       hb_buf_puts(b, "if [ -n \"${HPCBRIDGE_SLURM_ARRAY_JOB_ID-}\" ]; "
			      "then\n\texport SLURM_ARRAY_JOB_ID=\""
			      "$HPCBRIDGE_SLURM_ARRAY_JOB_ID\"\n"
			      "\texport PBS_ARRAY_ID=\""
			      "$HPCBRIDGE_SLURM_ARRAY_JOB_ID\"\n"
			      "fi\n");
}

/* 64-bit FNV-1a of s, seeded: the offset basis xor seed. */
static uint64_t fnv1a(const char *s, size_t n, uint64_t seed)
{
	return hb_fnv1a(HB_FNV1A_INIT ^ seed, s, n);
}

/*
 * A heredoc delimiter that occurs nowhere in the script: DELIM_BASE if it
 * can, else DELIM_BASE_<hash of the script and a counter>.
 */
static int choose_delim(const char *s, size_t n, char out[DELIM_MAX])
{
	snprintf(out, DELIM_MAX, "%s", DELIM_BASE);
	for (uint64_t k = 1; memmem(s, n, out, strlen(out)); k++) {
		if (k > 1000)
			return HB_EINVAL;
		snprintf(out, DELIM_MAX, "%s_%016" PRIx64, DELIM_BASE,
			 fnv1a(s, n, k));
	}
	return 0;
}

/*
 * The script's interpreter, from its "#!" line, split as Linux does: the
 * path, then at most one argument (the rest of the line, trimmed).
 */
static void shebang(const char *s, size_t n, const char **interp, size_t *ilen,
		    const char **arg, size_t *alen)
{
	const char *p, *end, *nl;

	*interp = NULL;
	*arg = NULL;
	*ilen = *alen = 0;
	if (n < 2 || s[0] != '#' || s[1] != '!')
		return;
	nl = memchr(s, '\n', n);
	end = nl ? nl : s + n;
	for (p = s + 2; p < end && (*p == ' ' || *p == '\t'); p++)
		;
	*interp = p;
	while (p < end && *p != ' ' && *p != '\t')
		p++;
	*ilen = (size_t)(p - *interp);
	if (!*ilen) {
		*interp = NULL;
		return;
	}
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (end > p) {
		*arg = p;
		*alen = (size_t)(end - p);
	}
}

static int put_run(struct hb_buf *b, const struct hb_jobspec *spec,
		   const char *script, size_t len)
{
	const char *interp, *arg;
	size_t ilen, alen;
	int rc;

	if (spec->chdir && *spec->chdir) {
		/* "./" keeps a relative path from looking like an option
		 * or being searched for in CDPATH. */
		if ((rc = hb_buf_puts(b, "hb_chdir=")) ||
		    (spec->chdir[0] != '/' && (rc = hb_buf_puts(b, "./"))) ||
		    (rc = put_quoted(b, spec->chdir, strlen(spec->chdir))) ||
		    (rc = hb_buf_putc(b, '\n')))
			return rc;
	}
	shebang(script, len, &interp, &ilen, &arg, &alen);
	if ((rc = hb_buf_puts(b, "hb_interp=")) ||
	    (rc = interp ? put_quoted(b, interp, ilen)
			 : hb_buf_puts(b, "/bin/sh")) ||
	    (rc = hb_buf_putc(b, '\n')))
		return rc;
	if (arg &&
	    ((rc = hb_buf_puts(b, "hb_interp_arg=")) ||
	     (rc = put_quoted(b, arg, alen)) || (rc = hb_buf_putc(b, '\n'))))
		return rc;
	return hb_buf_puts(b, "hb_script=$hb_dir/" SCRIPT_NAME "\n");
}

static int put_script(struct hb_buf *b, const char *script, size_t len,
		      const char *delim)
{
	bool add_nl = len && script[len - 1] != '\n';
	int rc;

	if ((rc = hb_buf_puts(b, "cat >\"$hb_script\" <<'")) ||
	    (rc = hb_buf_puts(b, delim)) ||
	    (rc = hb_buf_puts(b, "' || exit 1\n")) ||
	    (rc = hb_buf_append(b, script, len)) ||
	    (add_nl && (rc = hb_buf_putc(b, '\n'))) ||
	    (rc = hb_buf_puts(b, delim)) || (rc = hb_buf_puts(b, TRAILER)) ||
	    (rc = hb_buf_puts(b, add_nl ? "1\n" : "0\n")))
		return rc;
	return 0;
}

static int build(struct hb_buf *b, const struct hb_jobspec *spec,
		 const char *job_id, int64_t array_index, bool mounted,
		 const struct hb_shape *sh, const char *script, size_t len,
		 const char *delim)
{
	int rc;

	if ((rc = hb_buf_puts(b, HEAD)) || (rc = put_settings(b, spec)) ||
	    (rc = put_runtime(b, mounted)) ||
	    (rc = hb_buf_puts(b, SOURCE_LIB)) || (rc = put_env(b, spec)) ||
	    (rc = hb_buf_puts(b, "hb_ntasks_req=")) ||
	    (rc = hb_buf_put_u64(b, spec->ntasks)) ||
	    (rc = hb_buf_puts(b, " hb_ntpn=")) ||
	    (rc = hb_buf_put_u64(b, spec->ntasks_per_node)) ||
	    (rc = hb_buf_puts(b, " hb_cpt=")) ||
	    (rc = hb_buf_put_u64(b, spec->cpus_per_task)) ||
	    (rc = hb_buf_puts(b, " hb_fallback=")) ||
	    (rc = hb_buf_put_u64(b, sh->ntasks)) ||
	    (rc = hb_buf_puts(b, "\nhb_setup\n")) ||
	    (rc = put_job(b, spec, job_id, array_index, sh)) ||
	    (rc = put_run(b, spec, script, len)) ||
	    (rc = put_script(b, script, len, delim)))
		return rc;
	return 0;
}

int hb_launcher_script(const struct hb_jobspec *spec, const char *job_id,
		       int64_t array_index, struct hb_buf *out,
		       struct hb_err *err)
{
	return hb_launcher_script_ex(spec, job_id, array_index, false, out,
				     err);
}

int hb_launcher_script_ex(const struct hb_jobspec *spec, const char *job_id,
			  int64_t array_index, bool mounted,
			  struct hb_buf *out, struct hb_err *err)
{
	const char *file = spec ? spec->source_name : NULL;
	char delim[DELIM_MAX];
	struct hb_shape sh;
	struct hb_buf b;
	const char *script;
	size_t len, start;
	int rc;

	if (!spec || !spec->script)
		return hb_err_set(err, HB_EINVAL, file, 0,
				  "launcher: the job has no script");
	if (!job_id || !*job_id)
		return hb_err_set(err, HB_EINVAL, file, 0,
				  "launcher: no job id");
	script = spec->script;
	len = spec->script_len ? spec->script_len : strlen(script);
	if (memchr(script, '\0', len))
		return hb_err_set(err, HB_EINVAL, file, 0,
				  "launcher: the script contains a NUL byte, "
				  "which a shell cannot carry");
	if (len >= HB_LAUNCHER_MAX)
		return hb_err_set(err, HB_ETOOBIG, file, 0,
				  "launcher: the job script is %zu bytes; a "
				  "launcher script must stay under %u bytes",
				  len, HB_LAUNCHER_MAX);
	if (array_index > (int64_t)UINT32_MAX ||
	    (array_index >= 0 && spec->narray_ranges &&
	     !in_array(spec, (uint64_t)array_index)))
		return hb_err_set(err, HB_EINVAL, file, 0,
				  "launcher: %" PRId64 " is not an index of "
				  "the job's array '%.64s'",
				  array_index, spec->array ? spec->array : "");
	if ((rc = check_env(spec, err)))
		return rc;
	if (hb_jobspec_shape(spec, &sh))
		return hb_err_set(err, HB_ERANGE, file, 0,
				  "launcher: the job's task and CPU counts "
				  "overflow");
	if (choose_delim(script, len, delim))
		return hb_err_set(err, HB_EINVAL, file, 0,
				  "launcher: no heredoc delimiter fits the "
				  "script");

	/* Straight into out when it has room for any launcher that fits
	 * (the usual case: no copy).  Otherwise, or when it does not fit,
	 * build without a cap, so that the error can say how big the
	 * launcher would have been; the script is already capped. */
	start = out->len;
	if (out->max > out->len && out->max - out->len > HB_LAUNCHER_MAX) {
		(void)hb_buf_reserve(out, len + 4096);
		rc = build(out, spec, job_id, array_index, mounted, &sh, script,
			   len, delim);
		if (!rc && out->len - start < HB_LAUNCHER_MAX)
			return 0;
		out->len = start; /* as it was */
		if (out->data)
			out->data[start] = '\0';
		if (rc == HB_ENOMEM)
			return hb_err_set(err, rc, file, 0,
					  "launcher: out of memory");
	}
	hb_buf_init(&b, 0);
	/* Room for the script and the launcher's own lines at once (a
	 * hint: appends still check). */
	(void)hb_buf_reserve(&b, len + 4096);
	rc = build(&b, spec, job_id, array_index, mounted, &sh, script, len,
		   delim);
	if (rc == HB_ENOMEM) {
		rc = hb_err_set(err, rc, file, 0, "launcher: out of memory");
		goto out;
	}
	if (rc) {
		rc = hb_err_set(err, rc, file, 0,
				"launcher: cannot build the script: %s",
				hb_strerror(rc));
		goto out;
	}
	if (b.len >= HB_LAUNCHER_MAX) {
		rc = hb_err_set(err, HB_ETOOBIG, file, 0,
				"launcher: the launcher script would be %zu "
				"bytes with this %zu-byte job script; it must "
				"stay under %u bytes (one exec argument)",
				b.len, len, HB_LAUNCHER_MAX);
		goto out;
	}
	rc = hb_buf_append(out, b.data, b.len);
	if (rc)
		rc = hb_err_set(err, rc, file, 0,
				"launcher: cannot append %zu bytes: %s", b.len,
				hb_strerror(rc));
out:
	hb_buf_free(&b);
	return rc;
}

/* Last occurrence of needle in hay[0, n). */
static const char *last_memmem(const char *hay, size_t n, const char *needle,
			       size_t m)
{
	const char *last = NULL, *p = hay, *q;

	while ((q = memmem(p, n - (size_t)(p - hay), needle, m))) {
		last = q;
		p = q + 1;
	}
	return last;
}

int hb_launcher_extract(const char *text, const char **body, size_t *len)
{
	char open[DELIM_MAX + 16];
	const char *end, *dl, *op, *start;
	size_t n, dlen, tl = sizeof(TRAILER) - 1;
	int strip, k;

	if (!text || strncmp(text, MAGIC, sizeof(MAGIC) - 1) != 0)
		return HB_ENOENT;
	n = strlen(text);
	/* The text ends "\n<delim>\nhb_run 0\n" (or 1). */
	if (n < tl + 3 || text[n - 1] != '\n' ||
	    (text[n - 2] != '0' && text[n - 2] != '1'))
		return HB_ENOENT;
	strip = text[n - 2] == '1';
	end = text + n - 2 - tl;
	if (memcmp(end, TRAILER, tl) != 0)
		return HB_ENOENT;
	/* end points at the newline that ends the delimiter line. */
	for (dl = end; dl > text && dl[-1] != '\n'; dl--)
		;
	dlen = (size_t)(end - dl);
	if (dl == text || dlen < sizeof(DELIM_BASE) - 1 || dlen >= DELIM_MAX ||
	    memcmp(dl, DELIM_BASE, sizeof(DELIM_BASE) - 1) != 0)
		return HB_ENOENT;
	k = snprintf(open, sizeof(open), "<<'%.*s' || exit 1\n", (int)dlen, dl);
	if (k < 0 || (size_t)k >= sizeof(open))
		return HB_ENOENT;
	op = last_memmem(text, (size_t)(dl - text), open, (size_t)k);
	if (!op)
		return HB_ENOENT;
	start = op + k;
	if (start > dl)
		return HB_ENOENT;
	n = (size_t)(dl - start);
	if (strip) {
		if (n == 0 || start[n - 1] != '\n')
			return HB_ENOENT;
		n--;
	}
	*body = start;
	*len = n;
	return 0;
}

const char *hb_launcher_runtime(size_t *len)
{
	if (len)
		*len = sizeof(RUNTIME) - 1;
	return RUNTIME;
}

const char *hb_launcher_runtime_name(void)
{
	static char name[32];

	/* Written once; the text is a constant, so every call agrees. */
	if (!name[0])
		snprintf(name, sizeof(name), "hpcbridge-launcher-%08" PRIx32,
			 (uint32_t)(fnv1a(RUNTIME, sizeof(RUNTIME) - 1,
					  14695981039346656037ULL) &
				    0xffffffffu));
	return name;
}
