/* CTR benchmark, M-mode recording on (see bench_ctr.h). */
#include "bench_ctr.h"

int main(void)
{
	return bench_main(1);
}
