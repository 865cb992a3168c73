# shellcheck shell=bash
# Checks of kube-scheduler configuration values, shared by launch.sh start-scheduler and the
# scripts that pass such values on to it (bench/pipeline.sh), so both refuse the same values.
# Sourced; uses the sourcing script's die.

# FLAG VALUE: percentageOfNodesToScore is 1-100, or "default" (left unset: kube-scheduler's
# adaptive percentage).
check_percentage_of_nodes_to_score() {
  [[ "$2" == default || "$2" =~ ^(100|[1-9][0-9]?)$ ]] || die "$1 must be 1-100 or default, not '$2'"
}
