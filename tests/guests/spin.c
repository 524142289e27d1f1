/* spin: never ends (for instruction-budget tests). */
#include "rt/rt.h"

int main(void)
{
	rt_puts("spin: looping forever\n");
	for (;;)
		__asm__ volatile("");
}
