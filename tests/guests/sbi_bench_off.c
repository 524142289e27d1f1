/* VS-mode observation benchmark: the workload observes nothing (see sbi_bench.h). */
#include "sbi_bench.h"

int main(void)
{
	return bench_main(0);
}
