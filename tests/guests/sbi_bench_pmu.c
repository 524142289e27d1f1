/* VS-mode observation benchmark: the workload counts cycles, instructions, branches and branch misses through the SBI PMU extension (see sbi_bench.h). */
#include "sbi_bench.h"

int main(void)
{
	return bench_main(2);
}
