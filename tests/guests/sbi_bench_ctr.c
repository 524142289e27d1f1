/* VS-mode observation benchmark: the workload records its S-mode transfers in CTR (see sbi_bench.h). */
#include "sbi_bench.h"

int main(void)
{
	return bench_main(1);
}
