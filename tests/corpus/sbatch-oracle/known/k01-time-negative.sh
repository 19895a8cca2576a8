#!/bin/bash
# oracle-known: acceptance - sbatch 22.05 takes --time=-5 and wraps it to a
# limit of about 2982611 days; hpcbridge rejects it as a malformed time.
#SBATCH --time=-5
hostname
