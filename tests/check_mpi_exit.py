"""A rank that leaves an MPI job early makes the job fail with a message, not hang.

    check_mpi_exit.py MPIRUN TEST_DISTRIBUTED

Runs `mpirun -np 2 TEST_DISTRIBUTED --exit-early`: rank 1 exits (status 3) without
MPI_Finalize while rank 0 waits for it in an all-reduce. mpirun must end within 60 s with a
non-zero status and say which rank left.
"""
import re
import subprocess
import sys
import time

mpirun, program = sys.argv[1], sys.argv[2]
start = time.monotonic()
try:
    run = subprocess.run([mpirun, "-np", "2", program, "--exit-early"], capture_output=True,
                         text=True, timeout=60)
except subprocess.TimeoutExpired:
    sys.exit("FAIL: mpirun was still running 60 s after rank 1 left: the job hung")
output = run.stdout + run.stderr
print(output)
if run.returncode == 0:
    sys.exit("FAIL: mpirun exited 0 although rank 1 left early")
# Open MPI names a process [[job, 1], rank]; MPICH's mpirun says "rank 1".
if not re.search(r"\[\[\d+,\d+\],1\]|rank:? 1\b", output):
    sys.exit("FAIL: mpirun's message does not name rank 1")
print(f"ok: mpirun exited {run.returncode} after {time.monotonic() - start:.1f} s and named rank 1")
