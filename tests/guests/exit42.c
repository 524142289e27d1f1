/* exit42: reports failure code 42 through the test finisher. */
#include "rt/rt.h"

int main(void)
{
	rt_puts("exit42: exiting with code 42\n");
	rt_exit(42);
}
